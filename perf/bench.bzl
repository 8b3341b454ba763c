"""The shape every static C benchmark in perf/ has."""

def static_c_bench(name, test_args, deps = ["//perf:bench_time"], pthread = False):
    """A benchmark run natively and under `runsc do`, in one script.

    Makes NAME_prog (static, from NAME.c), NAME (NAME.sh, which runs it both
    ways: `bazel run -c opt //perf/DIR:NAME -- ARGS`) and NAME_test (the
    script with test_args: a brief run that proves the benchmark works; only
    a failed sandbox run fails it).

    Args:
      name: the benchmark; NAME.c and NAME.sh must exist.
      test_args: the brief run's arguments.
      deps: the program's libraries.
      pthread: the program starts threads.
    """
    native.cc_binary(
        name = name + "_prog",
        srcs = [name + ".c"],
        copts = ["-O2"],
        deps = deps,
        linkopts = ["-static"] + (["-pthread"] if pthread else []),
        linkstatic = True,
    )
    data = [
        ":" + name + "_prog",
        "//perf:lib.sh",
        "//runsc-compat:runsc",
    ]
    native.sh_binary(
        name = name,
        srcs = [name + ".sh"],
        data = data,
    )
    native.sh_test(
        name = name + "_test",
        size = "medium",
        srcs = [name + ".sh"],
        args = test_args,
        data = data,
        tags = ["exclusive"],
    )
