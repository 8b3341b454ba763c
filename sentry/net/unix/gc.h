// Descriptors in flight (SCM_RIGHTS) and the garbage collector of
// unreachable socket cycles (Linux's net/unix/scm.c and garbage.c).
//
// A description sent with SCM_RIGHTS is "in flight" from the send until a
// receiver takes it out of the message (or the message is dropped). For
// each in-flight unix socket the collector knows how many of its
// references are in flight (Endpoint::inflight_). A socket all of whose
// references are in flight (file use count == inflight) is a candidate; a
// candidate is garbage when every in-flight reference to it sits in the
// queues of other candidates, and no candidate reachable from outside
// (referenced from elsewhere) leads to it. The collector then drops the
// descriptors queued in the garbage sockets, which closes the cycle.
//
// Why the graph cannot change under the collector: every transfer of a
// description into or out of flight (attach at send, detach at receive,
// dropping a queued message) counts under gc mu, and a candidate has no
// reference outside flight from which anyone could read its queue or dup
// it. MSG_PEEK copies references without changing the counts, so it passes
// PeekBarrier (a lock/unlock of gc mu) before handing them out, as Linux.
// References taken out of a queue but not yet un-counted make their
// targets look referenced from outside: conservative, never wrong.
//
// Released descriptions are dropped through ReleaseFiles, which defers the
// drop while another release runs on the same thread, so a long chain of
// sockets each queued in the next is closed iteratively, not recursively.
//
// Lock order: gc mu -> Endpoint::mu_ (the collector scans queues); no code
// takes gc mu while holding an Endpoint's mu_.
#ifndef SENTRY_NET_UNIX_GC_H_
#define SENTRY_NET_UNIX_GC_H_

#include <stdint.h>

#include <vector>

#include "sentry/base/result.h"
#include "sentry/vfs/fd_table.h"

namespace sandbox::net::unix {

// Drops `files` (possibly the last references) with no lock held, deferred
// while a release is already running on this thread.
void ReleaseFiles(std::vector<vfs::FileRef> files);

// unix_attach_fds: counts `files` in flight for user `uid` (the sender's
// real uid). ETOOMANYREFS (nothing counted) when that user already has more
// than `limit` descriptors in flight and is not `privileged`
// (CAP_SYS_RESOURCE or CAP_SYS_ADMIN).
KResult<void> AttachRights(const std::vector<vfs::FileRef>& files, uint32_t uid,
                           uint64_t limit, bool privileged);

// References taken out of messages: un-counted and released when the batch
// is destroyed (declare it before the locks it must outlive).
class RightsBatch {
 public:
  RightsBatch() = default;
  ~RightsBatch();
  RightsBatch(const RightsBatch&) = delete;
  RightsBatch& operator=(const RightsBatch&) = delete;
  // `files` left flight (sent by `uid`); `keep`: the caller hands them to
  // the receiver (only un-counted), else they are dropped too.
  void Add(std::vector<vfs::FileRef>&& files, uint32_t uid, bool keep);
  // Runs now (idempotent): un-counts, releases the dropped ones, and
  // returns the kept ones.
  std::vector<vfs::FileRef> Finish();

 private:
  struct Entry {
    std::vector<vfs::FileRef> files;
    uint32_t uid;
    bool keep;
  };
  std::vector<Entry> entries_;
};

// The serialization of MSG_PEEK's copies with a running collection.
void PeekBarrier();

// unix_gc: collects unreachable cycles now (a no-op when nothing is in
// flight). Called when a unix socket is released, by the background
// collector, before /proc/net/unix is read, and by tests.
void CollectGarbage();
// Runs CollectGarbage when a unix socket is in flight and the graph of
// sockets in flight may hold a cycle (the last full pass found one, or a
// socket was sent since): without a cycle a release cannot make garbage.
void MaybeCollectGarbage();
// The background collector (on by default): while unix sockets are in
// flight, a host thread collects 20 ms after descriptors were sent, then at
// doubling intervals up to a second. Tests that count turn it off.
void SetBackgroundCollection(bool enabled);

// Counters (for tests and leak checks).
// Descriptions of any kind in flight.
int64_t InflightDescriptors();
// Unix sockets in flight (unix_tot_inflight).
int64_t InflightSockets();

}  // namespace sandbox::net::unix

#endif  // SENTRY_NET_UNIX_GC_H_
