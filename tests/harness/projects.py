"""Real projects a job builds and tests with its own commands in its jail (the agent's npm and
forge, as `jail claude --program` runs them): a TypeScript tool (its compiler and types from npm,
its tests on node's own runner) and a Foundry project with unit and invariant suites (forge-std
left out, as a contract job has it; its compiler the box's, solc-js behind solc's command line,
tests/harness/hands.py). Used by tests/world/test_job_commands.py and the bench."""

from __future__ import annotations

from tests.harness.boxes import as_imd
from tests.harness.hands import files_script

TS_TOOL = {
    "package.json": """{
  "name": "imdt-sum-tool",
  "version": "1.0.0",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "tsc -p .",
    "test": "node --test 'dist/test/*.test.js'"
  },
  "devDependencies": {
    "@types/node": "24.10.1",
    "typescript": "5.9.3"
  }
}
""",
    "tsconfig.json": """{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "outDir": "dist",
    "types": ["node"]
  },
  "include": ["src", "test"]
}
""",
    "src/tool.ts": """// A tool as an MCP server offers one: a name, its arguments, a text answer.
export interface Call {
  name: string;
  args: Record<string, unknown>;
}

export function handle(call: Call): string {
  if (call.name !== "sum") throw new Error(`unknown tool ${call.name}`);
  const xs = call.args.xs;
  if (!Array.isArray(xs) || !xs.every((x) => typeof x === "number")) throw new Error("xs: numbers");
  return String(xs.reduce((a: number, b: number) => a + b, 0));
}
""",
    "test/tool.test.ts": """import assert from "node:assert/strict";
import { test } from "node:test";
import { handle } from "../src/tool.js";

test("sums its numbers", () => assert.equal(handle({ name: "sum", args: { xs: [1, 2, 3] } }), "6"));
test("refuses another tool", () => assert.throws(() => handle({ name: "x", args: {} }), /unknown tool/));
""",
}
TS_STEPS = ("npm ci", "npm run build", "npm test")

# A web app as a job gets one to change: React, built by tsc and Vite, linted by ESLint with
# typescript-eslint and React's hooks rules, tested by Vitest in jsdom with Testing Library. Its
# toolchain is what makes it a real job's npm: about 215 packages installed (npm makes the lock at
# the owner's install), native ones among them (Vite's bundler, its CSS minifier).
TS_APP = {
    "package.json": """{
  "name": "imdt-tally-app",
  "version": "1.0.0",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "tsc -p . && vite build",
    "test": "eslint . && vitest run"
  },
  "dependencies": {
    "react": "19.3.1",
    "react-dom": "19.3.1"
  },
  "devDependencies": {
    "@eslint/js": "10.0.1",
    "@testing-library/dom": "10.4.2",
    "@testing-library/react": "16.3.3",
    "@types/node": "24.10.1",
    "@types/react": "19.3.3",
    "@types/react-dom": "19.3.0",
    "@vitejs/plugin-react": "6.3.1",
    "eslint": "10.16.0",
    "eslint-plugin-react-hooks": "7.1.1",
    "globals": "17.15.0",
    "jsdom": "31.0.1",
    "typescript": "5.9.3",
    "typescript-eslint": "8.74.0",
    "vite": "8.4.1",
    "vitest": "5.1.2"
  }
}
""",
    "tsconfig.json": """{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["ES2022", "DOM", "DOM.Iterable"],
    "module": "ESNext",
    "moduleResolution": "bundler",
    "jsx": "react-jsx",
    "strict": true,
    "noEmit": true,
    "skipLibCheck": true,
    "types": ["node"]
  },
  "include": ["src", "vite.config.ts"]
}
""",
    "vite.config.ts": """import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [react()],
  test: { environment: "jsdom" },
});
""",
    "eslint.config.js": """import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["dist"] },
  {
    files: ["**/*.{ts,tsx}"],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: { globals: globals.browser },
    plugins: { "react-hooks": reactHooks },
    rules: reactHooks.configs.recommended.rules,
  },
);
""",
    "index.html": """<!doctype html>
<html lang="en">
  <head><meta charset="UTF-8" /><title>Tally</title></head>
  <body>
    <div id="root"></div>
    <script type="module" src="/src/main.tsx"></script>
  </body>
</html>
""",
    "src/tally.ts": """// A tally of votes by option: what the app shows and what its buttons change.
export type Tally = Readonly<Record<string, number>>;

export function vote(tally: Tally, option: string): Tally {
  if (!(option in tally)) throw new Error(`unknown option ${option}`);
  return { ...tally, [option]: tally[option] + 1 };
}

export function leader(tally: Tally): string | undefined {
  const [best] = Object.entries(tally).sort(([, a], [, b]) => b - a);
  return best && best[1] > 0 ? best[0] : undefined;
}
""",
    "src/App.tsx": """import { useState } from "react";
import { leader, vote, type Tally } from "./tally";

export function App({ options }: { options: string[] }) {
  const [tally, setTally] = useState<Tally>(() => Object.fromEntries(options.map((o) => [o, 0])));
  return (
    <main>
      <p role="status">{leader(tally) ?? "no votes yet"}</p>
      {options.map((o) => (
        <button key={o} onClick={() => setTally((t) => vote(t, o))}>
          {o}: {tally[o]}
        </button>
      ))}
    </main>
  );
}
""",
    "src/main.tsx": """import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App options={["tea", "coffee"]} />
  </StrictMode>,
);
""",
    "src/tally.test.ts": """import { expect, test } from "vitest";
import { leader, vote } from "./tally";

test("counts a vote", () => expect(vote({ a: 0, b: 1 }, "a")).toEqual({ a: 1, b: 1 }));
test("refuses another option", () => expect(() => vote({ a: 0 }, "x")).toThrow(/unknown option/));
test("names no leader before a vote", () => expect(leader({ a: 0 })).toBeUndefined());
""",
    "src/App.test.tsx": """import { fireEvent, render, screen } from "@testing-library/react";
import { expect, test } from "vitest";
import { App } from "./App";

test("a click makes its option the leader", () => {
  render(<App options={["tea", "coffee"]} />);
  fireEvent.click(screen.getByText("coffee: 0"));
  expect(screen.getByRole("status").textContent).toBe("coffee");
});
""",
}
APP_PASSED = "Tests  4 passed (4)"

VAULT_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Vault {
    mapping(address => uint256) public balanceOf;
    uint256 public totalSupply;

    function deposit(uint256 amount) public {
        balanceOf[msg.sender] += amount;
        totalSupply += amount;
    }

    function withdraw(uint256 amount) public {
        require(balanceOf[msg.sender] >= amount, "balance");
        balanceOf[msg.sender] -= amount;
        totalSupply -= amount;
    }
}
"""
VAULT_TEST_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Vault} from "../src/Vault.sol";

contract VaultTest {
    Vault vault;

    function setUp() public {
        vault = new Vault();
    }

    function test_deposit_then_withdraw() public {
        vault.deposit(5);
        vault.withdraw(2);
        require(vault.balanceOf(address(this)) == 3 && vault.totalSupply() == 3, "three");
    }

    function testFuzz_deposit(uint96 amount) public {
        vault.deposit(amount);
        require(vault.totalSupply() == amount, "supply");
    }
}
"""
# The invariant suite: forge calls the handler (the one contract setUp deploys for it to target)
# at random, then checks the invariant after each call.
VAULT_INVARIANT_SOL = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Vault} from "../src/Vault.sol";

contract Handler {
    Vault public vault = new Vault();
    uint256 public deposited;

    function deposit(uint64 amount) public {
        vault.deposit(amount);
        deposited += amount;
    }

    function withdraw(uint64 amount) public {
        amount = uint64(amount % (vault.balanceOf(address(this)) + 1));
        vault.withdraw(amount);
        deposited -= amount;
    }
}

contract VaultInvariantTest {
    Handler handler;

    function setUp() public {
        handler = new Handler();
    }

    // What forge calls: the handler alone (not the vault it made, which it would call directly).
    function targetContracts() public view returns (address[] memory targets) {
        targets = new address[](1);
        targets[0] = address(handler);
    }

    function invariant_supply_is_what_was_deposited() public view {
        require(handler.vault().totalSupply() == handler.deposited(), "supply");
    }
}
"""
FOUNDRY_PROJECT = {
    "src/Vault.sol": VAULT_SOL,
    "test/Vault.t.sol": VAULT_TEST_SOL,
    "test/Vault.invariant.t.sol": VAULT_INVARIANT_SOL,
    "foundry.toml": '[profile.default]\nsrc = "src"\noffline = true\n\n[invariant]\nruns = 16\ndepth = 16\n',
}
# --force: each build compiles, as a job's first does (forge keeps its cache in the workspace).
FORGE_STEPS = ("forge build --force", "forge test")
FORGE_PASSED = ("[PASS] test_deposit_then_withdraw()", "[PASS] invariant_supply_is_what_was_deposited()")


def write(box, node: str, files: dict[str, str]) -> None:
    """`files` into a job's node (made first), as the worker's clone leaves them."""
    code, out = as_imd(box, f"mkdir -p {node} && cd {node} && {files_script(files)}")
    assert code == 0, out


def owners_install(box, node: str) -> None:
    """A TypeScript project's dependencies installed by the box's owner, outside every job: its
    lock written, and the box's npm cache warm with them (what a job's `npm ci` starts from)."""
    code, out = as_imd(
        box, f"cd {node} && npm install -s --no-audit --no-fund 2>&1 && rm -rf node_modules", timeout=300
    )
    assert code == 0, out
