"""syscall_test: a statically linked gtest binary of real syscalls, run through
the syscall test runner (//test/syscalls/runner) natively and, optionally,
under a sandbox.

    load("//bazel:syscall_test.bzl", "syscall_test")
    syscall_test(name = "read_write_test", srcs = ["read_write.cc"])

makes
  :read_write_test          the test binary (cc_binary, -static: the first
                            sandbox has no dynamic loader). Linked with gtest,
                            gmock, gtest_main and //test/util:test_util.
  :read_write_test_native   sh_test: runner --timeout=... <binary>. The runner
                            writes one XML testcase per gtest case to
                            $XML_OUTPUT_FILE (suite "read_write_test.native").
  :read_write_test_sandbox  only if `sandbox` is given (the hook for runsc):
                            sh_test: runner --sandbox="<sandbox> <sandbox_args>"
                            --xml_modes=sandbox <binary>, which runs the
                            binary natively and in the sandbox and fails if a
                            case that passes natively does not pass in the
                            sandbox. Its XML holds only the sandbox suite
                            ("<name>.sandbox"): `_native` reports the native
                            one. With `expected_failures` (a checked-in file
                            of known sandbox failures, see
                            test/syscalls/README.md) the listed cases are
                            skipped testcases, and a listed case that passes
                            fails the test.

  :read_write_test_overlay with `sandbox` too, unless overlay = False: runsc
                            do over the default root (the Gofer's read-only
                            host root under a tmpfs upper layer); the run
                            directories are under $TEST_TMPDIR (on the host's
                            root file system, so the lower layer shows them)
                            and not bound, so the test's files live in the
                            overlay. Known failures in
                            `overlay_expected_failures`.
  :read_write_test_gofer    with `sandbox` too, unless gofer = False: the
                            same, with gofer_sandbox_args (default: runsc do
                            over the host root served read-only by the Gofer (--root=host-ro), the run's
                            temporary directory bound at its own path with
                            --bind={TMPDIR}), so file tests run on a
                            Gofer-backed writable directory; its known
                            failures in `gofer_expected_failures`.

The sandbox hook: pass sandbox = "//runsc-compat:runsc" (any executable
label; it becomes a data dependency found through runfiles) and
sandbox_args = ["do", "--root=tmpfs", "--"] (the default): the runner then
runs `<runsc> do --root=tmpfs -- <binary> --gtest_color=no` in a fresh
temporary directory ({TMPDIR} in the arguments becomes that directory). To
turn it on for every test at once, set SANDBOX below instead of editing each
call. sandbox_tags (e.g. ["manual"]) keep the sandbox variant out of //...

Sizes: unless `size` is given, each target gets the smallest Bazel size
whose timeout outlasts the runner's (timeout_secs per run; a sandboxed
variant makes two runs), so a slow case is reported by the runner, not
killed by Bazel.
"""

# The default sandbox for every syscall_test: None, or a label such as
# "//runsc-compat:runsc" once that binary exists.
SANDBOX = None

_RUNNER = "//test/syscalls/runner:runner"
_WRAPPER = "//test/syscalls:run_syscall_test.sh"

def _size_for(secs):
    """The smallest Bazel test size whose timeout (60, 300, 900, 3600 s)
    covers `secs`, so the runner's own per-run timeout fires first."""
    for size, limit in [("small", 60), ("medium", 300), ("large", 900)]:
        if secs < limit:
            return size
    return "enormous"

def syscall_test(
        name,
        srcs,
        deps = [],
        size = None,
        timeout_secs = 120,
        sandbox = SANDBOX,
        sandbox_args = ["do", "--root=tmpfs", "--"],
        sandbox_tags = [],
        expected_failures = None,
        gofer = True,
        gofer_sandbox_args = ["do", "--root=host-ro", "--bind={TMPDIR}", "--"],
        gofer_expected_failures = None,
        overlay = True,
        overlay_sandbox_args = ["do", "--root=host", "--"],
        overlay_expected_failures = None,
        tags = [],
        copts = [],
        visibility = None):
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs,
        copts = copts,
        deps = deps + [
            "//test/util:test_util",
            "@sys//:gmock_static",
            "@sys//:gtest_main_static",
            "@sys//:gtest_static",
        ],
        linkopts = ["-static"],
        linkstatic = True,
        visibility = visibility,
    )
    runner_args = [
        "$(rootpath %s)" % _RUNNER,
        "--timeout=%ds" % timeout_secs,
    ]
    # Bazel's timeout must outlast the runner's: one run natively, two
    # (native, then sandboxed) for each variant.
    native.sh_test(
        name = name + "_native",
        size = size or _size_for(timeout_secs),
        srcs = [_WRAPPER],
        args = runner_args + ["$(rootpath :%s)" % name],
        data = [_RUNNER, ":" + name],
        tags = tags,
        visibility = visibility,
    )
    # The sandboxed variants: (suffix, runsc arguments, known failures,
    # extra runner flags). They differ only in these.
    variants = []
    if sandbox:
        variants.append(("_sandbox", sandbox_args, expected_failures, []))
    if sandbox and gofer:
        variants.append(
            ("_gofer", gofer_sandbox_args, gofer_expected_failures, []),
        )
    if sandbox and overlay:
        # The run directories go under $TEST_TMPDIR, not /tmp: under
        # `bazel test` /tmp is a private tmpfs the Gofer does not serve
        # (and the sandbox's /tmp is its own tmpfs), while TEST_TMPDIR is a
        # directory of the host's root file system, so the overlay root
        # shows it (its lower layer) and the test's files land in the upper
        # layer.
        variants.append(
            (
                "_overlay",
                overlay_sandbox_args,
                overlay_expected_failures,
                ["--tmpdir={TEST_TMPDIR}"],
            ),
        )
    for suffix, args, known_failures, extra_flags in variants:
        _sandbox_test(
            name = name + suffix,
            binary = name,
            size = size or _size_for(2 * timeout_secs),
            runner_args = runner_args + extra_flags,
            sandbox = sandbox,
            sandbox_args = args,
            expected_failures = known_failures,
            tags = tags + sandbox_tags,
            visibility = visibility,
        )

def _sandbox_test(
        name,
        binary,
        size,
        runner_args,
        sandbox,
        sandbox_args,
        expected_failures,
        tags,
        visibility):
    # Single quotes: Bazel splits args like a shell, and the prefix must
    # reach the runner as one argument.
    prefix = " ".join(["$(rootpath %s)" % sandbox] + sandbox_args)
    sandbox_flags = ["'--sandbox=%s'" % prefix, "--xml_modes=sandbox"]
    sandbox_data = [_RUNNER, ":" + binary, sandbox]
    if expected_failures:
        sandbox_flags.append(
            "--expected_failures=$(rootpath %s)" % expected_failures,
        )
        sandbox_data.append(expected_failures)
    native.sh_test(
        name = name,
        size = size,
        srcs = [_WRAPPER],
        args = runner_args + sandbox_flags + ["$(rootpath :%s)" % binary],
        data = sandbox_data,
        tags = tags,
        visibility = visibility,
    )
