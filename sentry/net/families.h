// RegisterBuiltinFamilies: registers every socket family the Sentry has
// (called once at start-up, before the first task runs).
#ifndef SENTRY_NET_FAMILIES_H_
#define SENTRY_NET_FAMILIES_H_

namespace sandbox::net {

void RegisterBuiltinFamilies();

}  // namespace sandbox::net

#endif  // SENTRY_NET_FAMILIES_H_
