# lit configuration of the codegen tests: each tests/codegen/*.wf file is a fusion whose RUN
# lines pipe `widefuse compile` into FileCheck, as in LLVM and MLIR.
import os

import lit.formats

config.name = "widefuse-codegen"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".wf"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.widefuse_test_exec_root

# widefuse and the LLVM tools (FileCheck, not) are found on PATH.
config.environment["PATH"] = os.pathsep.join(
    [config.widefuse_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Kernels compiled by the tests stay in the build tree, never in ~/.cache.
config.environment["WIDEFUSE_CACHE_DIR"] = os.path.join(config.widefuse_test_exec_root,
                                                        "kernel-cache")
