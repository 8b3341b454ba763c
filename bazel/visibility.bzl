"""Bazel visibility derived from tools/layers.txt.

Every package of the tree declares

    load("//bazel:visibility.bzl", "layer_visibility")
    package(default_visibility = layer_visibility())

so that Bazel itself refuses a dependency that goes down-to-up the layering:
a package's targets are visible to its own unit and to every unit of a
strictly higher layer, minus the units a `deny` of layers.txt keeps out (the
Gofer and the broker see nothing of the Sentry; the CLI only sentry/boot).
Testing helpers (test/util, gofer/server, testing/ folders, targets named
testing) are visible to all, as the layering lets any test use them.

This is the coarse net: a unit's visibility covers its whole subtree
(`__subpackages__`), so a nested lower unit (gofer/protocol under gofer) sees
what its enclosing unit sees. tools/check-layering.py is the exact check,
file by file and label by label; it also checks that bazel/layers.bzl (the
layers as data) matches tools/layers.txt (`check-layering.py --write-bzl`
rewrites it).
"""

load("//bazel:layers.bzl", "DENIES", "LAYERS", "TESTING_HELPERS")

PUBLIC = ["//visibility:public"]

# For targets that are testing helpers inside an ordinary package
# (cc_library(name = "testing", visibility = TESTING_VISIBILITY)).
TESTING_VISIBILITY = PUBLIC

def _under(path, prefix):
    return path == prefix or path.startswith(prefix + "/")

def _unit_of(path):
    """Returns (rank, unit) of the longest prefix containing path."""
    best = None
    best_rank = -1
    for rank, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if _under(path, p) and (best == None or len(p) > len(best)):
                best = p
                best_rank = rank
    return best_rank, best

def _denied(user, unit):
    for frm, to, excepts in DENIES:
        if not (_under(user, frm) and _under(unit, to)):
            continue
        excepted = False
        for e in excepts:
            if _under(unit, e):
                excepted = True
        if not excepted:
            return True
    return False

def visible_to(pkg):
    """The package specs that may depend on targets of package `pkg`."""
    if pkg.endswith("/testing") or "/testing/" in pkg:
        return PUBLIC
    for t in TESTING_HELPERS:
        if _under(pkg, t):
            return PUBLIC
    rank, unit = _unit_of(pkg)
    if unit == None:
        return PUBLIC
    out = ["//%s:__subpackages__" % unit]
    for r, prefixes in enumerate(LAYERS):
        if r <= rank:
            continue
        for p in prefixes:
            if not _denied(p, unit):
                out.append("//%s:__subpackages__" % p)
    return out

def layer_visibility():
    """The default visibility of the calling package."""
    return visible_to(native.package_name())
