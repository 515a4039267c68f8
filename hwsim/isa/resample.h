#pragma once
// RESIZE's source coordinates (ISA 1.2), part of the command's semantics: TFLite's
// resize_nearest_neighbor / resize_bilinear index arithmetic, in float32 as TFLite computes it,
// so the firmware (which loads the input rows a tile needs) and the unit agree on every index.
// Headers only, freestanding.

#include <cstdint>

namespace npu::isa {

// in / out, or (in - 1) / (out - 1) with align_corners (and more than one output).
inline float resizeScale(uint32_t in, uint32_t out, bool alignCorners) {
    return alignCorners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                   : static_cast<float>(in) / static_cast<float>(out);
}

inline int32_t clampIndex(int32_t v, uint32_t size) {
    const int32_t hi = static_cast<int32_t>(size) - 1;
    return v < 0 ? 0 : (v > hi ? hi : v);
}

// The nearest source index of output index v: floor((v + offset) * scale), or round() with
// align_corners, offset 0.5 with half_pixel_centers; clamped to [0, size).
inline uint32_t nearestSource(uint32_t v, uint32_t size, float scale, bool alignCorners, bool halfPixel) {
    const float offset = halfPixel ? 0.5f : 0.0f;
    const float s = (static_cast<float>(v) + offset) * scale;
    const float r = alignCorners ? __builtin_roundf(s) : __builtin_floorf(s);
    return static_cast<uint32_t>(clampIndex(static_cast<int32_t>(r), size));
}

// The two bilinear source indexes of output index v and the weight of the second.
struct BilinearTap {
    uint32_t lo = 0, hi = 0;
    float frac = 0.0f;
};
inline BilinearTap bilinearSource(uint32_t v, uint32_t size, float scale, bool halfPixel) {
    const float s = halfPixel ? (static_cast<float>(v) + 0.5f) * scale - 0.5f : static_cast<float>(v) * scale;
    int32_t lo = static_cast<int32_t>(__builtin_floorf(s));
    lo = lo < 0 ? 0 : lo;
    int32_t hi = static_cast<int32_t>(__builtin_ceilf(s));
    const int32_t last = static_cast<int32_t>(size) - 1;
    hi = hi > last ? last : hi;
    return {static_cast<uint32_t>(lo), static_cast<uint32_t>(hi < 0 ? 0 : hi), s - static_cast<float>(lo)};
}

}  // namespace npu::isa
