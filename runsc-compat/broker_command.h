// `runsc broker`: the network broker (broker/broker.h RunBroker) that
// `runsc do` starts for --network=host or --publish: the one process that
// opens host Internet sockets for the sandbox. Flags: broker/broker.h.
#ifndef RUNSC_COMPAT_BROKER_COMMAND_H_
#define RUNSC_COMPAT_BROKER_COMMAND_H_

namespace sandbox::runsc {

// argv[0] is "broker". Exit status: 0 when the Sentry's connection ended,
// 1 on an error (printed), 2 on bad flags.
int BrokerCommand(int argc, char** argv);

}  // namespace sandbox::runsc

#endif  // RUNSC_COMPAT_BROKER_COMMAND_H_
