"""cc_fuzz_target: one fuzz target, replayed as a gtest in CI and fuzzed with libFuzzer.

Write the target as usual for libFuzzer:

    extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
    // optional: extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);

and declare it beside its code:

    load("//bazel:fuzz.bzl", "cc_fuzz_target")
    cc_fuzz_target(
        name = "elf_fuzz",                              # the replay test
        srcs = ["elf_fuzz.cc"],
        deps = [":elf"],
        corpus = glob(["corpus/elf_fuzz/**"]),          # at least one file
    )

This makes:
  :<name>            cc_test (gcc, like every other test): one gtest case per
                     corpus file, named Corpus.<file>, plus Builtin.* cases
                     (empty input, every single byte). `bazel test` runs it.
                     Run it by hand on a crash file: bazel-bin/<pkg>/<name> FILE|DIR...
  :<name>_lib        the target's code (alwayslink cc_library).
  :<name>_corpus     filegroup of the corpus.
  :<name>_libfuzzer  cc_binary linked with -fsanitize=fuzzer; tagged manual and
                     fuzz_libfuzzer, so gcc builds (`//...`) skip it. Only
                     tools/fuzz.sh builds it, with clang, under its own output base.
"""

def cc_fuzz_target(
        name,
        srcs,
        deps = [],
        corpus = [],
        copts = [],
        size = "small",
        tags = [],
        visibility = None):
    if not corpus:
        fail("cc_fuzz_target %s: corpus is empty; add at least one seed file" % name)
    native.cc_library(
        name = name + "_lib",
        testonly = True,
        srcs = srcs,
        deps = deps,
        copts = copts,
        alwayslink = True,
        visibility = visibility,
    )
    native.filegroup(
        name = name + "_corpus",
        testonly = True,
        srcs = corpus,
        visibility = visibility,
    )
    native.cc_test(
        name = name,
        size = size,
        srcs = [],
        deps = [
            ":" + name + "_lib",
            "//test/fuzz:replay_main",
        ],
        data = [":" + name + "_corpus"],
        args = ["$(rootpaths :%s_corpus)" % name],
        tags = tags + ["fuzz_replay"],
        visibility = visibility,
    )
    native.cc_binary(
        name = name + "_libfuzzer",
        testonly = True,
        deps = [":" + name + "_lib"],
        data = [":" + name + "_corpus"],
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual", "fuzz_libfuzzer"],
        visibility = visibility,
    )
