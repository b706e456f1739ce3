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
    """The TypeScript tool's dependencies installed by the box's owner, outside every job: its
    lock written, and the box's npm cache warm with them (what a job's `npm ci` starts from)."""
    code, out = as_imd(
        box, f"cd {node} && npm install -s --no-audit --no-fund 2>&1 && rm -rf node_modules", timeout=300
    )
    assert code == 0, out
