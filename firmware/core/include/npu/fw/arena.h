#pragma once
// A bump allocator over a fixed buffer the platform hands in: the firmware's only source of
// memory. Allocation failure returns nullptr; callers turn it into RESOURCE_EXHAUSTED.

#include <cstddef>
#include <cstdint>
#include <new>

namespace npu::fw {

class Arena {
public:
    Arena(void* buffer, size_t size) : base_(static_cast<uint8_t*>(buffer)), size_(size) {}

    void* allocate(size_t bytes, size_t align = alignof(max_align_t)) {
        size_t start = (used_ + align - 1) & ~(align - 1);
        if (start > size_ || bytes > size_ - start) return nullptr;
        used_ = start + bytes;
        if (used_ > peak_) peak_ = used_;
        return base_ + start;
    }
    template <typename T>
    T* allocateArray(size_t count) {
        if (count > SIZE_MAX / sizeof(T)) return nullptr;
        void* p = allocate(count * sizeof(T), alignof(T));
        if (p == nullptr) return nullptr;
        T* t = static_cast<T*>(p);
        for (size_t i = 0; i < count; ++i) new (&t[i]) T();
        return t;
    }
    size_t mark() const { return used_; }
    void release(size_t mark) {
        if (mark <= used_) used_ = mark;
    }
    size_t used() const { return used_; }
    size_t peak() const { return peak_; }
    size_t capacity() const { return size_; }

private:
    uint8_t* base_;
    size_t size_;
    size_t used_ = 0;
    size_t peak_ = 0;
};

}  // namespace npu::fw
