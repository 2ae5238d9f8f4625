# lit configuration for tilec: IR and front-end tests checked with FileCheck.
import os
import sys
import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".tile", ".tir"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tilec_obj_root, "tests", "lit")

tools_dir = config.tilec_obj_root
config.environment["PATH"] = os.pathsep.join(
    [tools_dir, config.llvm_bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["ASAN_OPTIONS"] = "detect_leaks=1"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
config.substitutions.append(("%tilec-opt", os.path.join(tools_dir, "tilec-opt")))
config.substitutions.append(("%tilec", os.path.join(tools_dir, "tilec")))
config.substitutions.append(("%lib", os.path.join(config.tilec_src_root, "lib")))
# %gen SHAPE N OUT: writes a generated deep or long input (tests/fuzz/gen_deep.py).
config.substitutions.append(("%gen", sys.executable + " " + os.path.join(config.tilec_src_root, "tests", "fuzz", "gen_deep.py")))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%roundtrip", os.path.join(config.tilec_src_root, "tests", "lit", "roundtrip.sh")))
if config.ptxas and not config.ptxas.endswith("NOTFOUND"):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
