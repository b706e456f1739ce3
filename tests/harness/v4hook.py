"""A Uniswap v4 hook job, as hook jobs come: a hook contract and its forge test against v4-core,
which the repository vendors with its own libraries (forge-std, OpenZeppelin, solmate under its
lib/), solc pinned as v4-core's. Its dependencies are the real ones, from npm: the v4-core
package carries that lib/. Used by tests/world/test_v4_hook_job.py and the bench."""

from __future__ import annotations

from tests.harness import hands
from tests.harness.boxes import as_imd

V4_CORE = "@uniswap/v4-core@1.0.2"
SOLC = "0.8.26"  # v4-core's own, and what hook jobs pin
PACKAGE = "/tmp/imdt-v4-core"  # the npm install in the box, copied into each origin
HOOK = "src/SwapCounterHook.sol"

HOOK_SOL = """// SPDX-License-Identifier: MIT
pragma solidity 0.8.26;

import {IHooks} from "v4-core/src/interfaces/IHooks.sol";
import {IPoolManager} from "v4-core/src/interfaces/IPoolManager.sol";
import {Hooks} from "v4-core/src/libraries/Hooks.sol";
import {PoolKey} from "v4-core/src/types/PoolKey.sol";
import {PoolId} from "v4-core/src/types/PoolId.sol";
import {BalanceDelta} from "v4-core/src/types/BalanceDelta.sol";
import {BeforeSwapDelta, BeforeSwapDeltaLibrary} from "v4-core/src/types/BeforeSwapDelta.sol";
import {ModifyLiquidityParams, SwapParams} from "v4-core/src/types/PoolOperation.sol";

/// A hook that counts each pool's swaps, before and after; every other hook is off.
contract SwapCounterHook is IHooks {
    error NotPoolManager();
    error HookNotImplemented();

    IPoolManager public immutable poolManager;
    mapping(PoolId => uint256) public beforeSwapCount;
    mapping(PoolId => uint256) public afterSwapCount;

    constructor(IPoolManager _poolManager) {
        poolManager = _poolManager;
        Hooks.validateHookPermissions(this, getHookPermissions());
    }

    modifier onlyPoolManager() {
        if (msg.sender != address(poolManager)) revert NotPoolManager();
        _;
    }

    function getHookPermissions() public pure returns (Hooks.Permissions memory) {
        return Hooks.Permissions({
            beforeInitialize: false,
            afterInitialize: false,
            beforeAddLiquidity: false,
            afterAddLiquidity: false,
            beforeRemoveLiquidity: false,
            afterRemoveLiquidity: false,
            beforeSwap: true,
            afterSwap: true,
            beforeDonate: false,
            afterDonate: false,
            beforeSwapReturnDelta: false,
            afterSwapReturnDelta: false,
            afterAddLiquidityReturnDelta: false,
            afterRemoveLiquidityReturnDelta: false
        });
    }

    function beforeSwap(address, PoolKey calldata key, SwapParams calldata, bytes calldata)
        external
        onlyPoolManager
        returns (bytes4, BeforeSwapDelta, uint24)
    {
        beforeSwapCount[key.toId()]++;
        return (IHooks.beforeSwap.selector, BeforeSwapDeltaLibrary.ZERO_DELTA, 0);
    }

    function afterSwap(address, PoolKey calldata key, SwapParams calldata, BalanceDelta, bytes calldata)
        external
        onlyPoolManager
        returns (bytes4, int128)
    {
        afterSwapCount[key.toId()]++;
        return (IHooks.afterSwap.selector, 0);
    }

    function beforeInitialize(address, PoolKey calldata, uint160) external pure returns (bytes4) {
        revert HookNotImplemented();
    }

    function afterInitialize(address, PoolKey calldata, uint160, int24) external pure returns (bytes4) {
        revert HookNotImplemented();
    }

    function beforeAddLiquidity(address, PoolKey calldata, ModifyLiquidityParams calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        revert HookNotImplemented();
    }

    function afterAddLiquidity(
        address,
        PoolKey calldata,
        ModifyLiquidityParams calldata,
        BalanceDelta,
        BalanceDelta,
        bytes calldata
    ) external pure returns (bytes4, BalanceDelta) {
        revert HookNotImplemented();
    }

    function beforeRemoveLiquidity(address, PoolKey calldata, ModifyLiquidityParams calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        revert HookNotImplemented();
    }

    function afterRemoveLiquidity(
        address,
        PoolKey calldata,
        ModifyLiquidityParams calldata,
        BalanceDelta,
        BalanceDelta,
        bytes calldata
    ) external pure returns (bytes4, BalanceDelta) {
        revert HookNotImplemented();
    }

    function beforeDonate(address, PoolKey calldata, uint256, uint256, bytes calldata) external pure returns (bytes4) {
        revert HookNotImplemented();
    }

    function afterDonate(address, PoolKey calldata, uint256, uint256, bytes calldata) external pure returns (bytes4) {
        revert HookNotImplemented();
    }
}
"""
# v4-core's own test utilities: Deployers makes the pool manager, its routers and two tokens.
HOOK_TEST_SOL = """// SPDX-License-Identifier: MIT
pragma solidity 0.8.26;

import {Deployers} from "v4-core/test/utils/Deployers.sol";
import {IHooks} from "v4-core/src/interfaces/IHooks.sol";
import {Hooks} from "v4-core/src/libraries/Hooks.sol";
import {PoolId} from "v4-core/src/types/PoolId.sol";
import {toBalanceDelta} from "v4-core/src/types/BalanceDelta.sol";
import {SwapCounterHook} from "../src/SwapCounterHook.sol";

contract SwapCounterHookTest is Deployers {
    SwapCounterHook hook;
    PoolId id;

    function setUp() public {
        deployFreshManagerAndRouters();
        deployMintAndApprove2Currencies();
        // A hook's address carries its permissions: the flags in its lowest bits.
        address flags = address(uint160(Hooks.BEFORE_SWAP_FLAG | Hooks.AFTER_SWAP_FLAG) ^ (0x4444 << 144));
        deployCodeTo("SwapCounterHook.sol:SwapCounterHook", abi.encode(manager), flags);
        hook = SwapCounterHook(flags);
        (key, id) = initPoolAndAddLiquidity(currency0, currency1, IHooks(flags), 3000, SQRT_PRICE_1_1);
    }

    function test_swaps_are_counted() public {
        swap(key, true, -1e15, ZERO_BYTES);
        swap(key, false, -1e15, ZERO_BYTES);
        assertEq(hook.beforeSwapCount(id), 2);
        assertEq(hook.afterSwapCount(id), 2);
    }

    function test_only_the_pool_manager_calls_it() public {
        vm.expectRevert(SwapCounterHook.NotPoolManager.selector);
        hook.afterSwap(address(this), key, SWAP_PARAMS, toBalanceDelta(0, 0), ZERO_BYTES);
    }
}
"""
# No via_ir, no optimizer: v4-core builds without them (its own debug profile), and solc-js is wasm.
FOUNDRY_TOML = f"""[profile.default]
src = "src"
test = "test"
libs = ["lib"]
solc = "{SOLC}"
evm_version = "cancun"
remappings = [
    "v4-core/=lib/v4-core/",
    "forge-std/=lib/v4-core/lib/forge-std/src/",
    "solmate/=lib/v4-core/lib/solmate/",
    "@openzeppelin/=lib/v4-core/lib/openzeppelin-contracts/",
]
"""


def install(box) -> None:
    """solc 0.8.26 (solc-js) where forge looks, and v4-core from npm where each origin copies
    it from; npm must be in the box's reach."""
    hands.install_solc(box, SOLC)
    code, out = as_imd(
        box,
        f"mkdir -p {PACKAGE} && cd {PACKAGE} && npm install -s --no-audit --no-fund --no-update-notifier {V4_CORE} 2>&1",
        timeout=300,
    )
    assert code == 0, out


def hook_task(box) -> tuple[str, dict]:
    """A hook job's origin (hands.origin_task): the hook, its test, foundry.toml and v4-core in
    lib/ as the package ships it, but for its build output, which a clone of v4-core does not
    carry. The node's workspace, and the task."""
    files = {HOOK: HOOK_SOL, "test/SwapCounterHook.t.sol": HOOK_TEST_SOL, "foundry.toml": FOUNDRY_TOML}
    vendored = f"mkdir lib && cp -r {PACKAGE}/node_modules/@uniswap/v4-core lib/v4-core && rm -rf lib/v4-core/out"
    return hands.origin_task(box, files, also=vendored)


def agent_change(box, space: str) -> None:
    """What the agent would have done: a change to the hook, marked."""
    code, out = as_imd(
        box, f"cd {space} && sed -i 's/beforeSwapCount\\[key.toId()\\]++;/& \\/\\/ imdt-changed/' {HOOK}"
    )
    assert code == 0, out
