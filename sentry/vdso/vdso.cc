#include "sentry/vdso/vdso.h"

#include <cpuid.h>
#include <sys/mman.h>
#include <x86intrin.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sentry/mm/mappable.h"

namespace sandbox::vdso {
namespace {

using mm::kPageSize;

constexpr int64_t kNsPerSec = 1000000000;
constexpr uint32_t kShift = 32;
// A line more than this off the host clock is re-based instead of steered
// (forward: a jump; backward: counted, and kMaxBadFits in a row disable
// the vDSO's clocks).
constexpr int64_t kMaxSteerNs = 1000000;
constexpr int kMaxBadFits = 3;
// Steering changes the rate by at most this fraction (1000 ppm).
constexpr double kMaxSteer = 1e-3;
// Realtime/boottime offsets move only by more than this (sampling noise).
constexpr int64_t kOffsetNoiseNs = 2000;
// The fit's window: up to this many refits (about a minute).
constexpr size_t kHistory = 64;
constexpr absl::Duration kMinInterval = absl::Milliseconds(1);
constexpr absl::Duration kMaxInterval = absl::Seconds(1);

uint64_t RdtscOrdered() {
  _mm_lfence();
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

int64_t ToNs(const timespec& ts) {
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

// One reading of a host clock, paired with the TSC in the middle of the
// tightest of a few tries.
struct Reading {
  uint64_t tsc = 0;
  int64_t ns = 0;
};

Reading ReadHost(clockid_t clock) {
  Reading best;
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    timespec ts;
    const uint64_t t1 = RdtscOrdered();
    clock_gettime(clock, &ts);
    const uint64_t t2 = RdtscOrdered();
    if (t2 - t1 < best_width) {
      best_width = t2 - t1;
      best = {t1 + (t2 - t1) / 2, ToNs(ts)};
    }
  }
  return best;
}

struct Point {
  Reading mono, raw;
};

Point ReadPoint() {
  return {ReadHost(CLOCK_MONOTONIC), ReadHost(CLOCK_MONOTONIC_RAW)};
}

// Taken when the Sentry starts: the first end of the first fit.
const Point g_start_point = ReadPoint();

bool InvariantTsc() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d >> 8) & 1;
}

int64_t Eval(const VdsoClock& c, uint64_t cycles) {
  const uint64_t delta = cycles > c.base_cycles ? cycles - c.base_cycles : 0;
  const unsigned __int128 prod = static_cast<unsigned __int128>(delta) * c.mult;
  return c.base_ns +
         static_cast<int64_t>(static_cast<uint64_t>(prod >> c.shift));
}

uint64_t MultFor(double ns_per_cycle) {
  return static_cast<uint64_t>(std::llround(std::ldexp(ns_per_cycle, kShift)));
}

// Reads `d` (written under its seqcount by Timekeeper::Publish) like the
// vDSO does. Returns -1 if the clocks are off.
int64_t ReadNs(const VdsoData& d, int clock) {
  const volatile VdsoData& v = d;
  for (;;) {
    const uint32_t seq = __atomic_load_n(&d.seq, __ATOMIC_ACQUIRE);
    if (seq & 1) {
      _mm_pause();
      continue;
    }
    if (!v.enabled) return -1;
    const uint64_t cycles = RdtscOrdered();
    VdsoClock c;
    const bool raw = clock == CLOCK_MONOTONIC_RAW;
    c.base_cycles = raw ? v.raw.base_cycles : v.mono.base_cycles;
    c.base_ns = raw ? v.raw.base_ns : v.mono.base_ns;
    c.mult = raw ? v.raw.mult : v.mono.mult;
    c.shift = raw ? v.raw.shift : v.mono.shift;
    int64_t ns = Eval(c, cycles);
    if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE) {
      ns += v.realtime_offset_ns;
    } else if (clock == CLOCK_BOOTTIME) {
      ns += v.boottime_offset_ns;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&d.seq, __ATOMIC_RELAXED) == seq) return ns;
  }
}

// Writes `src` into `dst` under dst's seqcount (one writer at a time:
// Timekeeper::mu_).
void SeqWrite(VdsoData* dst, const VdsoData& src) {
  const uint32_t seq = __atomic_load_n(&dst->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&dst->seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  volatile VdsoData* v = dst;
  v->enabled = src.enabled;
  v->mono.base_cycles = src.mono.base_cycles;
  v->mono.base_ns = src.mono.base_ns;
  v->mono.mult = src.mono.mult;
  v->mono.shift = src.mono.shift;
  v->raw.base_cycles = src.raw.base_cycles;
  v->raw.base_ns = src.raw.base_ns;
  v->raw.mult = src.raw.mult;
  v->raw.shift = src.raw.shift;
  v->realtime_offset_ns = src.realtime_offset_ns;
  v->boottime_offset_ns = src.boottime_offset_ns;
  v->hres_res_ns = src.hres_res_ns;
  v->coarse_res_ns = src.coarse_res_ns;
  __atomic_store_n(&dst->seq, seq + 2, __ATOMIC_RELEASE);
}

// The clock source. One per Sentry, never destroyed (its thread runs for
// the life of the process).
class Timekeeper {
 public:
  static Timekeeper& Get() {
    static Timekeeper* const tk = new Timekeeper();
    return *tk;
  }

  // `page` (the Sentry's mapping of a [vvar] page) gets the parameters now
  // and at every refit until Unregister.
  void Register(VdsoData* page) {
    absl::MutexLock l(&mu_);
    SeqWrite(page, params_);
    pages_.push_back(page);
  }
  void Unregister(VdsoData* page) {
    absl::MutexLock l(&mu_);
    pages_.erase(std::remove(pages_.begin(), pages_.end(), page), pages_.end());
  }

  bool Read(int clock, timespec* ts) {
    const int64_t ns = ReadNs(current_, clock);
    if (ns < 0) return false;
    ts->tv_sec = ns / kNsPerSec;
    ts->tv_nsec = ns % kNsPerSec;
    return true;
  }

  VdsoData Snapshot() {
    absl::MutexLock l(&mu_);
    return params_;
  }

  void Refit() {
    absl::MutexLock l(&fit_mu_);
    RefitLocked();
  }

 private:
  Timekeeper() {
    timespec res;
    params_.hres_res_ns =
        clock_getres(CLOCK_MONOTONIC, &res) == 0 ? ToNs(res) : 0;
    params_.coarse_res_ns =
        clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 ? ToNs(res) : 0;
    params_.mono.shift = params_.raw.shift = kShift;
    tsc_ok_ = InvariantTsc();
    if (!tsc_ok_) {
      Publish(params_);  // resolutions only; clocks stay off
      return;
    }
    history_.push_back(g_start_point);
    // The first fit needs some window: at least kMinInterval since the
    // start point.
    const uint64_t start = g_start_point.mono.tsc;
    const Reading r = ReadHost(CLOCK_MONOTONIC);
    if (r.ns - g_start_point.mono.ns < absl::ToInt64Nanoseconds(kMinInterval)) {
      absl::SleepFor(kMinInterval);
    }
    (void)start;
    absl::Duration next;
    {
      absl::MutexLock l(&fit_mu_);
      next = RefitLocked();
    }
    std::thread([this, next] { Loop(next); }).detach();
  }

  void Loop(absl::Duration next) {
    for (;;) {
      absl::SleepFor(next);
      absl::MutexLock l(&fit_mu_);
      next = RefitLocked();
    }
  }

  // Fits both lines to the host clocks and publishes them. Returns when to
  // refit next: the fit's window (its error is about a sampling error per
  // window length), between kMinInterval and kMaxInterval.
  absl::Duration RefitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fit_mu_) {
    if (!tsc_ok_ || disabled_) return kMaxInterval;
    const Point now = ReadPoint();
    const Reading real = ReadHost(CLOCK_REALTIME);
    const Reading boot = ReadHost(CLOCK_BOOTTIME);
    history_.push_back(now);
    while (history_.size() > kHistory) history_.pop_front();
    const Point& old = history_.front();
    if (now.mono.tsc <= old.mono.tsc || now.mono.ns <= old.mono.ns ||
        now.raw.tsc <= old.raw.tsc || now.raw.ns <= old.raw.ns) {
      return kMinInterval;  // no window yet
    }
    const double f_mono = static_cast<double>(now.mono.ns - old.mono.ns) /
                          static_cast<double>(now.mono.tsc - old.mono.tsc);
    const double f_raw = static_cast<double>(now.raw.ns - old.raw.ns) /
                         static_cast<double>(now.raw.tsc - old.raw.tsc);
    // A TSC slower than 100 MHz or faster than 100 GHz is not one.
    if (!(f_mono > 0.01 && f_mono < 10) || !(f_raw > 0.01 && f_raw < 10)) {
      return Bad();
    }
    const absl::Duration interval =
        std::clamp(absl::Nanoseconds(now.mono.ns - old.mono.ns), kMinInterval,
                   kMaxInterval);
    const double interval_ns = absl::ToDoubleNanoseconds(interval);

    VdsoData next = Snapshot();  // params_ changes only under fit_mu_
    const bool fitted = fitted_;
    // The switch point: lines continue from where they are now.
    const uint64_t at = RdtscOrdered();
    bool bad = false;
    auto fit = [&](VdsoClock& c, const Reading& host, double f) {
      // The host clock at `at`, by the fitted rate.
      const int64_t target =
          host.ns +
          static_cast<int64_t>(
              (static_cast<double>(at) - static_cast<double>(host.tsc)) * f);
      if (!fitted) {
        c = {at, target, MultFor(f), kShift, 0};
        return;
      }
      const int64_t cur = Eval(c, at);
      const int64_t err = target - cur;  // > 0: the line is behind
      if (err > kMaxSteerNs) {
        c = {at, target, MultFor(f), kShift, 0};  // jump forward
        bad = true;
        return;
      }
      if (err < -kMaxSteerNs) bad = true;
      // Steer: meet the host line one interval from now.
      double rate = f + static_cast<double>(err) / (interval_ns / f);
      rate = std::clamp(rate, f * (1 - kMaxSteer), f * (1 + kMaxSteer));
      c = {at, cur, MultFor(rate), kShift, 0};
    };
    fit(next.mono, now.mono, f_mono);
    fit(next.raw, now.raw, f_raw);
    // Offsets of the other clocks from CLOCK_MONOTONIC (by the host's
    // monotonic line at their readings). REALTIME moves when it differs
    // by more than the noise (a clock step); BOOTTIME only forwards
    // (suspend), so that it stays monotonic.
    auto mono_at = [&](uint64_t tsc) {
      return now.mono.ns +
             static_cast<int64_t>((static_cast<double>(tsc) -
                                   static_cast<double>(now.mono.tsc)) *
                                  f_mono);
    };
    const int64_t real_off = real.ns - mono_at(real.tsc);
    const int64_t boot_off = boot.ns - mono_at(boot.tsc);
    if (!fitted_ ||
        std::llabs(real_off - next.realtime_offset_ns) > kOffsetNoiseNs) {
      next.realtime_offset_ns = real_off;
    }
    if (!fitted_ || boot_off > next.boottime_offset_ns + kOffsetNoiseNs) {
      next.boottime_offset_ns = std::max<int64_t>(boot_off, 0);
    }
    bad_fits_ = bad ? bad_fits_ + 1 : 0;
    if (bad_fits_ >= kMaxBadFits) {
      disabled_ = true;
      next.enabled = 0;
    } else {
      next.enabled = 1;
    }
    fitted_ = true;
    Publish(next);
    return interval;
  }

  absl::Duration Bad() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fit_mu_) {
    if (++bad_fits_ >= kMaxBadFits) {
      disabled_ = true;
      VdsoData next = Snapshot();
      next.enabled = 0;
      Publish(next);
    }
    return kMaxInterval;
  }

  void Publish(const VdsoData& next) {
    absl::MutexLock l(&mu_);
    params_ = next;
    params_.seq = 0;
    SeqWrite(&current_, params_);
    for (VdsoData* p : pages_) SeqWrite(p, params_);
  }

  absl::Mutex fit_mu_;  // one refit at a time; before mu_
  std::deque<Point> history_ ABSL_GUARDED_BY(fit_mu_);
  bool tsc_ok_ = false;
  bool fitted_ ABSL_GUARDED_BY(fit_mu_) = false;
  bool disabled_ ABSL_GUARDED_BY(fit_mu_) = false;
  int bad_fits_ ABSL_GUARDED_BY(fit_mu_) = 0;

  absl::Mutex mu_;
  VdsoData params_ ABSL_GUARDED_BY(mu_) = {};  // what was last published
  std::vector<VdsoData*> pages_ ABSL_GUARDED_BY(mu_);
  // The Sentry's own copy, read under its seqcount without mu_.
  VdsoData current_ = {};
};

// The vDSO's pages in one MemoryFile: [vvar] then the image, page-rounded.
// Shared by every mapping in that file; freed with the last.
class VdsoPages {
 public:
  static KResult<std::shared_ptr<VdsoPages>> For(platform::MemoryFile& mf) {
    static absl::Mutex cache_mu;
    static auto* cache =
        new std::map<platform::MemoryFile*, std::weak_ptr<VdsoPages>>();
    absl::MutexLock l(&cache_mu);
    auto it = cache->find(&mf);
    if (it != cache->end()) {
      if (std::shared_ptr<VdsoPages> p = it->second.lock()) return p;
    }
    const uint64_t text = mm::PageRoundUp(ImageSize());
    auto off = mf.Allocate(kVvarSize + text);
    if (!off.ok()) return kENOMEM;
    VdsoData* data = nullptr;
    if (!mf.Write(*off + kVvarSize, ImageData(), ImageSize()) ||
        !mf.Zero(*off, sizeof(VdsoData)) ||
        (data = reinterpret_cast<VdsoData*>(
             mf.Internal(*off, sizeof(VdsoData)))) == nullptr) {
      mf.Free(*off, kVvarSize + text);
      return kENOMEM;
    }
    auto p = std::shared_ptr<VdsoPages>(new VdsoPages(mf, *off, text, data));
    Timekeeper::Get().Register(data);
    (*cache)[&mf] = p;
    return p;
  }

  ~VdsoPages() {
    Timekeeper::Get().Unregister(data_);
    mf_.Free(off_, kVvarSize + text_size_);
  }

  uint64_t vvar_offset() const { return off_; }
  uint64_t text_offset() const { return off_ + kVvarSize; }
  uint64_t text_size() const { return text_size_; }

 private:
  VdsoPages(platform::MemoryFile& mf, uint64_t off, uint64_t text_size,
            VdsoData* data)
      : mf_(mf), off_(off), text_size_(text_size), data_(data) {}

  platform::MemoryFile& mf_;
  const uint64_t off_;
  const uint64_t text_size_;
  VdsoData* const data_;
};

// [vvar] or [vdso]: `size` bytes of the MemoryFile at `file_offset`, never
// invalidated. The pages are mapped at most `max_prot`; private mappings
// copy them on write (only [vdso] can be made writable).
class PagesMappable : public mm::Mappable {
 public:
  PagesMappable(std::shared_ptr<VdsoPages> pages, uint64_t file_offset,
                uint64_t size, int max_prot)
      : pages_(std::move(pages)),
        file_offset_(file_offset),
        size_(size),
        max_prot_(max_prot) {}

  void AddMapping(mm::MappingSpace*, uintptr_t, uint64_t, uint64_t,
                  bool) override {}
  void RemoveMapping(mm::MappingSpace*, uintptr_t, uint64_t, uint64_t,
                     bool) override {}

  KResult<std::vector<mm::Translation>> Translate(
      uint64_t required_offset, uint64_t required_length,
      uint64_t optional_offset, uint64_t optional_length,
      platform::AccessType) override {
    if (required_offset >= size_ || required_length > size_ - required_offset) {
      return kEFAULT;  // past the end: SIGBUS, as Linux's special mappings
    }
    const uint64_t lo = std::min(optional_offset, required_offset);
    const uint64_t hi =
        std::min(size_, std::max(optional_offset + optional_length,
                                 required_offset + required_length));
    return std::vector<mm::Translation>{
        {lo, hi - lo, file_offset_ + lo, max_prot_}};
  }

 private:
  const std::shared_ptr<VdsoPages> pages_;
  const uint64_t file_offset_;
  const uint64_t size_;
  const int max_prot_;
};

}  // namespace

KResult<uintptr_t> MapVdso(mm::MemoryManager& mm) {
  TRY(std::shared_ptr<VdsoPages> pages, VdsoPages::For(mm.memory_file()));
  const uint64_t text = pages->text_size();
  // Where mmap would put both (get_unmapped_area in Linux's map_vdso).
  TRY(uintptr_t base, mm.Mmap({.length = kVvarSize + text,
                               .prot = PROT_NONE,
                               .flags = MAP_PRIVATE | MAP_ANONYMOUS}));
  auto vvar = std::make_shared<PagesMappable>(pages, pages->vvar_offset(),
                                              kVvarSize, PROT_READ);
  auto image = std::make_shared<PagesMappable>(pages, pages->text_offset(),
                                               text, PROT_READ | PROT_EXEC);
  // [vvar]: VM_READ|VM_MAYREAD only, so mprotect(PROT_WRITE or PROT_EXEC)
  // is EACCES as in Linux.
  auto v = mm.Mmap({.addr = base,
                    .length = kVvarSize,
                    .prot = PROT_READ,
                    .flags = MAP_PRIVATE | MAP_FIXED,
                    .mappable = vvar,
                    .max_prot = PROT_READ,
                    .name = "[vvar]"});
  // [vdso]: VM_READ|VM_EXEC|VM_MAY{READ,WRITE,EXEC}, private.
  auto t = v.ok() ? mm.Mmap({.addr = base + kVvarSize,
                             .length = text,
                             .prot = PROT_READ | PROT_EXEC,
                             .flags = MAP_PRIVATE | MAP_FIXED,
                             .mappable = image,
                             .name = "[vdso]"})
                  : v;
  if (!t.ok()) {
    (void)mm.Munmap(base, kVvarSize + text);
    return t.error();
  }
  return base + kVvarSize;
}

bool ClockGettime(int clock, timespec* ts) {
  switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
      return Timekeeper::Get().Read(clock, ts);
    default:
      return false;
  }
}

VdsoData CurrentParams() { return Timekeeper::Get().Snapshot(); }

void UpdateNowForTest() { Timekeeper::Get().Refit(); }

}  // namespace sandbox::vdso
