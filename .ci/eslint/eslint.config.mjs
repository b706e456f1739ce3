// The JS gate: ESLint's recommended rules for every .mjs/.js file, which all run on node
// as ES modules but the browser's page.js of box check's probe (a script in Chromium), and every
// .cjs file (the programs box check's probe ships: CommonJS). An empty catch is how the probe says "this attempt may fail"; an unused
// name is allowed only as the rest of an object taken apart, or when it starts with "_".
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["**/*.mjs", "**/*.js"],
    languageOptions: { ecmaVersion: 2024, sourceType: "module", globals: { ...globals.node } },
    rules: {
      "no-empty": ["error", { allowEmptyCatch: true }],
      "no-unused-vars": ["error", { ignoreRestSiblings: true, varsIgnorePattern: "^_", argsIgnorePattern: "^_" }],
    },
  },
  {
    // The browser's page's script (box check's probe): a classic script in Chromium.
    files: ["imdbox/check/probe/page.js"],
    languageOptions: { ecmaVersion: 2024, sourceType: "script", globals: { ...globals.browser } },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { ecmaVersion: 2024, sourceType: "commonjs", globals: { ...globals.node } },
    rules: { "no-empty": ["error", { allowEmptyCatch: true }] },
  },
];
