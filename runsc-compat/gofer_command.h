// `runsc gofer`: the Gofer process (gofer/gofer.h RunGofer) that `runsc do`
// starts to serve the host's files to the Sentry. Flags: gofer/flags.h.
#ifndef RUNSC_COMPAT_GOFER_COMMAND_H_
#define RUNSC_COMPAT_GOFER_COMMAND_H_

namespace sandbox::runsc {

// argv[0] is "gofer". Exit status: 0 when every connection ended cleanly,
// 1 on an error (printed), 2 on bad flags.
int GoferCommand(int argc, char** argv);

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_GOFER_COMMAND_H_
