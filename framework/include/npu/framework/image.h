#pragma once
// PNG images as model inputs (`npu run MODEL.onnx --input image.png`): decoding with libpng, then
// the usual preprocessing of an image classifier or detector: resize to the input's height and
// width, scale to [0, 1], subtract a per-channel mean and divide by a per-channel std, channels in
// RGB or BGR order, laid out NCHW or NHWC as the model input is (docs/onnx.md).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npu/framework/onnx_import.h"
#include "npu/hal/result.h"

namespace npu::framework {

// 8-bit pixels, rows top to bottom, channels interleaved (1: gray, 3: RGB).
struct Image {
    uint32_t width = 0, height = 0, channels = 0;
    std::vector<uint8_t> pixels;
};

// Decoding refuses (INVALID_ARGUMENT, naming `where`) anything that is not a complete PNG, and
// images larger than these before any pixel memory is allocated.
inline constexpr uint32_t kMaxImageSide = 16384;
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 26;  // 64 Mpixel

// `channels` 1 (gray) or 3 (RGB): the PNG is converted to it (alpha is composed on black).
Result<Image> decodePng(std::string_view bytes, uint32_t channels, const std::string& where);
Result<Image> loadPngFile(const std::string& path, uint32_t channels);

struct ImagePreprocess {
    enum class Resize { kBilinear, kNearest };
    Resize resize = Resize::kBilinear;
    std::array<float, 3> mean = {0, 0, 0};  // subtracted from value / 255, per channel (in model order)
    std::array<float, 3> std = {1, 1, 1};   // then divided by this
    bool bgr = false;                       // channel 0 is blue (OpenCV-trained models)
};

// The float32 tensor of shape `dims` ([N, C, H, W], or [N, H, W, C] when dims[1] is not 1 or 3 and
// dims[3] is) from `image`: resized to H x W, normalized, the same image in every batch entry.
// INVALID_ARGUMENT when `dims` is not such a shape or a std is 0.
Result<OnnxTensor> imageTensor(const Image& image, const std::vector<int64_t>& dims, const ImagePreprocess& p,
                               const std::string& where);

// The channel count (1 or 3) of an image input of shape `dims`, as imageTensor reads it.
Result<uint32_t> imageChannels(const std::vector<int64_t>& dims, const std::string& where);

}  // namespace npu::framework
