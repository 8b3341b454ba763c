// `runsc do`: runs one program in a new sandbox and returns its status.
#ifndef RUNSC_COMPAT_DO_COMMAND_H_
#define RUNSC_COMPAT_DO_COMMAND_H_

namespace sandbox::runsc {

// argv[0] is "do". Returns the CLI's exit status.
int DoCommand(int argc, char** argv);

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_DO_COMMAND_H_
