#include "sentry/loader/exec.h"

#include "absl/strings/str_format.h"
#include "sentry/loader/shebang.h"
#include "sentry/loader/vfs_reader.h"
#include "sentry/vfs/operations.h"

namespace sandbox::loader {

KResult<WriteDenial> DenyWrite(std::shared_ptr<vfs::VfsFile> file) {
  TRY_VOID(file->inode().DenyWriteAccess());
  vfs::VfsFile* raw = file.get();
  // The deleter owns the file: the inode outlives the hold.
  return WriteDenial(raw, [file = std::move(file)](const void*) mutable {
    file->inode().AllowWriteAccess();
    file.reset();
  });
}

KResult<ExecResult> LoadExecutable(mm::MemoryManager& mm, ExecRequest req,
                                   std::string* why, bool* committed) {
  if (committed != nullptr) *committed = false;
  auto fail = [&](Errno e, std::string msg) -> Errno {
    if (why != nullptr) *why = std::move(msg);
    return e;
  };
  std::shared_ptr<vfs::VfsFile> file = std::move(req.file);
  WriteDenial denial = std::move(req.file_denial);
  if (denial == nullptr) {
    KResult<WriteDenial> d = DenyWrite(file);
    if (!d.ok()) return fail(d.error(), "the file is open for writing");
    denial = std::move(d).value();
  }
  // bprm->interp: the path of the file at hand (the script's, then each
  // interpreter's), which the next interpreter receives as its argument.
  std::string interp_path = req.filename;
  std::vector<std::string> argv = std::move(req.args.argv);
  // Linux's exec_binprm(): search_binary_handler runs for depth 0..5; a
  // sixth rewrite is ELOOP.
  for (int depth = 0;; ++depth) {
    if (depth > kMaxInterpreterDepth) {
      return fail(kELOOP, "too many levels of #! interpreters");
    }
    VfsFileReader reader(file);
    char magic[2] = {};
    TRY(size_t n, reader.ReadAt(0, magic, sizeof(magic)));
    if (n == 2 && magic[0] == '#' && magic[1] == '!') {
      // binfmt_script.
      if (req.path_inaccessible) {
        return fail(kENOENT, "a script run through a close-on-exec descriptor");
      }
      auto s = ParseShebang(reader);
      if (!s.ok()) {
        return fail(s.error(), absl::StrFormat("%s: bad #! line", interp_path));
      }
      argv = ShebangArgv(*s, interp_path, argv);
      auto next = OpenExecutable(req.base, s->interpreter);
      if (!next.ok()) {
        return fail(next.error(),
                    absl::StrFormat("%s: interpreter %s: %s", interp_path,
                                    s->interpreter, next.error().name()));
      }
      // open_exec's deny_write_access; exec_binprm then lets the script be
      // written again.
      KResult<WriteDenial> d = DenyWrite(*next);
      if (!d.ok()) {
        return fail(d.error(), absl::StrFormat("%s: interpreter %s is open "
                                               "for writing",
                                               interp_path, s->interpreter));
      }
      denial = std::move(d).value();
      file = std::move(next).value();
      interp_path = s->interpreter;
      continue;
    }
    // binfmt_elf (anything else is ENOEXEC from the ELF parser).
    LoadArgs args = std::move(req.args);
    args.argv = std::move(argv);
    args.exec_path = req.filename;
    const vfs::ResolveBase& base = req.base;
    // The PT_INTERP file's hold, released once it is loaded (as
    // load_elf_binary's allow_write_access).
    WriteDenial interp_denial;
    if (base.root.ok()) {
      KResult<std::string> p = vfs::GetCwd(base.root, file->vd());
      if (p.ok()) args.maps_name = *p;
    }
    args.open_interpreter =
        [&base, &interp_denial](
            const std::string& path) -> KResult<std::unique_ptr<FileReader>> {
      TRY(std::shared_ptr<vfs::VfsFile> f, OpenExecutable(base, path));
      TRY(interp_denial, DenyWrite(f));
      return std::unique_ptr<FileReader>(new VfsFileReader(std::move(f)));
    };
    std::string load_why;
    KResult<LoadResult> r = Load(mm, reader, args, &load_why, committed);
    if (!r.ok()) return fail(r.error(), std::move(load_why));
    mm::MemoryManager::ProcessImage image = mm.process_image();
    image.exe_denial = std::move(denial);
    mm.SetProcessImage(std::move(image));
    ExecResult out;
    out.load = std::move(r).value();
    out.file = file;
    KResult<std::string> p =
        base.root.ok() ? vfs::GetCwd(base.root, file->vd()) : kENOENT;
    out.exe_path = p.ok() ? *p : interp_path;
    return out;
  }
}

}  // namespace sandbox::loader
