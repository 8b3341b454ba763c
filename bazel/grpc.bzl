"""cc_grpc_library for Bazel 4.2.3 without network: runs protoc with Debian's grpc_cpp_plugin."""

def _grpc_gen_impl(ctx):
    info = ctx.attr.proto[ProtoInfo]
    srcs = info.direct_sources
    outs_h = []
    outs_cc = []
    for src in srcs:
        outs_h.append(ctx.actions.declare_file(src.basename[:-len(".proto")] + ".grpc.pb.h"))
        outs_cc.append(ctx.actions.declare_file(src.basename[:-len(".proto")] + ".grpc.pb.cc"))
    includes = ["-I" + p for p in info.transitive_proto_path.to_list()]
    args = ctx.actions.args()
    args.add("--plugin=protoc-gen-grpc=" + ctx.executable._plugin.path)
    args.add("--grpc_out=" + ctx.bin_dir.path)
    args.add_all(includes)
    args.add("-I.")
    args.add_all([s.path for s in srcs])
    ctx.actions.run(
        executable = ctx.executable._protoc,
        arguments = [args],
        inputs = info.transitive_sources,
        tools = [ctx.executable._plugin],
        outputs = outs_h + outs_cc,
        mnemonic = "GrpcGen",
        progress_message = "Generating gRPC stubs for %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset(outs_h + outs_cc)),
        OutputGroupInfo(hdrs = depset(outs_h), srcs = depset(outs_cc)),
    ]

_grpc_gen = rule(
    implementation = _grpc_gen_impl,
    attrs = {
        "proto": attr.label(providers = [ProtoInfo]),
        "_protoc": attr.label(default = "@com_google_protobuf//:protoc", executable = True, cfg = "exec"),
        "_plugin": attr.label(default = "@sys//:grpc_cpp_plugin", executable = True, cfg = "exec"),
    },
)

def cc_grpc_library(name, proto, cc_proto, visibility = None, **kw):
    """Generates and compiles gRPC C++ stubs. proto must be in this package."""
    _grpc_gen(name = name + "_gen", proto = proto)
    native.filegroup(name = name + "_hdrs", srcs = [":" + name + "_gen"], output_group = "hdrs")
    native.filegroup(name = name + "_srcs", srcs = [":" + name + "_gen"], output_group = "srcs")
    native.cc_library(
        name = name,
        srcs = [":" + name + "_srcs"],
        hdrs = [":" + name + "_hdrs"],
        deps = [cc_proto, "@sys//:grpcpp", "@sys//:protobuf"],
        visibility = visibility,
        **kw
    )
