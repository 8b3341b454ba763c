"""A repository rule that turns Debian's pkg-config modules into cc_library targets.

Each entry of `libs` becomes `@<name>//:<key>` carrying the module's link
options and preprocessor flags, and `@<name>//:<key>_static` with the flags of
`pkg-config --static` for fully static binaries. Headers come from the
toolchain's built-in /usr/include, so no `hdrs` are listed. Each entry of
`tools` becomes `@<name>//:<tool>`, a symlink to the host binary.
"""

def _run(ctx, args):
    res = ctx.execute(args)
    if res.return_code != 0:
        fail("%s failed: %s" % (" ".join(args), res.stderr))
    return res.stdout.strip()

def _split(flags):
    return [f for f in flags.split(" ") if f]

def _impl(ctx):
    lines = ['package(default_visibility = ["//visibility:public"])', ""]
    for key, modules in ctx.attr.libs.items():
        mods = _split(modules)
        cflags = _split(_run(ctx, ["pkg-config", "--cflags"] + mods))
        defines = [f[2:] for f in cflags if f.startswith("-D")]
        copts = [f for f in cflags if not f.startswith("-D") and not f.startswith("-I")]
        for suffix, extra in [("", []), ("_static", ["--static"])]:
            libs = _split(_run(ctx, ["pkg-config", "--libs"] + extra + mods))
            lines.append("cc_library(")
            lines.append('    name = "%s%s",' % (key, suffix))
            lines.append("    defines = %s," % repr(defines))
            lines.append("    copts = %s," % repr(copts))
            lines.append("    linkopts = %s," % repr(libs))
            lines.append(")")
            lines.append("")
    for tool in ctx.attr.tools:
        path = ctx.which(tool)
        if path == None:
            fail("tool %s not found on PATH; run tools/install-deps.sh" % tool)
        ctx.symlink(path, "bin/" + tool)
        lines.append('sh_binary(name = "%s", srcs = ["bin/%s"])' % (tool, tool))
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD.bazel", "\n".join(lines) + "\n")

pkg_config_repository = repository_rule(
    implementation = _impl,
    attrs = {
        "libs": attr.string_dict(doc = "target name -> space-separated pkg-config modules"),
        "tools": attr.string_list(doc = "host tools to expose as sh_binary targets"),
    },
    local = True,
    environ = ["PATH", "PKG_CONFIG_PATH"],
)
