#include "sigbus_guard.h"

#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace npu::fw::host {

namespace {

constexpr uint32_t kSlots = 1024;

struct Guard {
    std::atomic<uintptr_t> begin{0};  // 0: free
    std::atomic<uintptr_t> end{0};
    std::atomic<bool> hit{false};
};

Guard gGuards[kSlots];
std::mutex gMutex;  // registration only; the handler reads the atomics
struct sigaction gPrevious {};

void onSigbus(int sig, siginfo_t* info, void* context) {
    const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Guard& g : gGuards) {
        const uintptr_t begin = g.begin.load(std::memory_order_acquire);
        const uintptr_t end = g.end.load(std::memory_order_acquire);
        if (begin == 0 || at < begin || at >= end) continue;
        // mmap is a plain system call here: zero pages over the range, and the access retries.
        mmap(reinterpret_cast<void*>(begin), end - begin, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        g.hit.store(true, std::memory_order_release);
        return;
    }
    if ((gPrevious.sa_flags & SA_SIGINFO) != 0 && gPrevious.sa_sigaction != nullptr) {
        gPrevious.sa_sigaction(sig, info, context);
    } else if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN) {
        gPrevious.sa_handler(sig);
    } else {
        // Not ours: the default action, on the faulting access again once this returns.
        signal(SIGBUS, SIG_DFL);
    }
}

// (Re)installs the handler when another one took its place (a test framework's, per test).
void install() {
    struct sigaction current {};
    if (sigaction(SIGBUS, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
        current.sa_sigaction == onSigbus) {
        return;
    }
    struct sigaction sa {};
    sa.sa_sigaction = onSigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &gPrevious);
}

}  // namespace

uint32_t guardRange(uint8_t* begin, uint64_t bytes) {
    std::lock_guard lock(gMutex);
    install();
    for (uint32_t i = 0; i < kSlots; ++i) {
        Guard& g = gGuards[i];
        if (g.begin.load() != 0) continue;
        g.hit.store(false);
        g.end.store(reinterpret_cast<uintptr_t>(begin) + bytes, std::memory_order_release);
        g.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
        return i;
    }
    return kNoGuard;
}

void unguardRange(uint32_t handle) {
    if (handle >= kSlots) return;
    std::lock_guard lock(gMutex);
    gGuards[handle].begin.store(0, std::memory_order_release);
}

bool rangeHit(uint32_t handle) {
    return handle < kSlots && gGuards[handle].hit.load(std::memory_order_acquire);
}

}  // namespace npu::fw::host
