// PNG decoding (libpng's simplified API) and image preprocessing for model inputs.
#include "npu/framework/image.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace npu::framework {
namespace {

// Frees the libpng read state on every path out.
struct PngReader {
    png_image image{};
    PngReader() { image.version = PNG_IMAGE_VERSION; }
    ~PngReader() { png_image_free(&image); }
    PngReader(const PngReader&) = delete;
    PngReader& operator=(const PngReader&) = delete;
    std::string message() const { return image.message[0] != '\0' ? image.message : "unknown libpng error"; }
};

// Source coordinate of destination pixel `d` when `src` pixels are resized to `dst`.
struct Sample {
    uint32_t lo = 0, hi = 0;
    float frac = 0;
};

Sample sampleAt(uint32_t d, uint32_t src, uint32_t dst, ImagePreprocess::Resize resize) {
    const double scale = double(src) / double(dst);
    if (resize == ImagePreprocess::Resize::kNearest) {
        const auto s = uint32_t(std::min<double>(std::floor(d * scale), src - 1));
        return {s, s, 0};
    }
    // Half-pixel centres, clamped at the edges (OpenCV's INTER_LINEAR).
    const double x = std::clamp((d + 0.5) * scale - 0.5, 0.0, double(src - 1));
    const auto lo = uint32_t(std::floor(x));
    return {lo, std::min(lo + 1, src - 1), float(x - lo)};
}

}  // namespace

Result<Image> decodePng(std::string_view bytes, uint32_t channels, const std::string& where) {
    if (channels != 1 && channels != 3)
        return invalidArgument(where + ": " + std::to_string(channels) + " channels asked (1 or 3)");
    PngReader r;
    if (!png_image_begin_read_from_memory(&r.image, bytes.data(), bytes.size()))
        return invalidArgument(where + ": not a readable PNG: " + r.message());
    const uint32_t w = r.image.width, h = r.image.height;
    if (w == 0 || h == 0 || w > kMaxImageSide || h > kMaxImageSide || uint64_t(w) * h > kMaxImagePixels) {
        return invalidArgument(where + ": PNG of " + std::to_string(w) + " x " + std::to_string(h) +
                               " pixels; at most " + std::to_string(kMaxImageSide) + " per side and " +
                               std::to_string(kMaxImagePixels) + " in all are read");
    }
    r.image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    Image image{w, h, channels, std::vector<uint8_t>(PNG_IMAGE_SIZE(r.image))};
    png_color black{0, 0, 0};
    if (!png_image_finish_read(&r.image, &black, image.pixels.data(), 0, nullptr))
        return invalidArgument(where + ": PNG data is damaged or truncated: " + r.message());
    return image;
}

Result<Image> loadPngFile(const std::string& path, uint32_t channels) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalidArgument(path + ": cannot open");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return invalidArgument(path + ": cannot read");
    return decodePng(bytes, channels, path);
}

Result<uint32_t> imageChannels(const std::vector<int64_t>& dims, const std::string& where) {
    auto isChannels = [](int64_t c) { return c == 1 || c == 3; };
    if (dims.size() == 4 && isChannels(dims[1])) return uint32_t(dims[1]);
    if (dims.size() == 4 && isChannels(dims[3])) return uint32_t(dims[3]);
    std::string text;
    for (int64_t d : dims) text += (text.empty() ? "" : "x") + std::to_string(d);
    return invalidArgument(where +
                           ": an image feeds a [N, C, H, W] or [N, H, W, C] input with C 1 or 3; this "
                           "input is [" +
                           text + "]");
}

Result<OnnxTensor> imageTensor(const Image& image, const std::vector<int64_t>& dims, const ImagePreprocess& p,
                               const std::string& where) {
    const uint32_t channels = NPU_TRY(imageChannels(dims, where));
    if (image.channels != channels || image.pixels.size() != size_t(image.width) * image.height * channels)
        return invalidArgument(where + ": the image has " + std::to_string(image.channels) +
                               " channel(s), the input " + std::to_string(channels));
    for (uint32_t c = 0; c < channels; ++c) {
        if (!(p.std[c] != 0) || !std::isfinite(p.std[c]) || !std::isfinite(p.mean[c]))
            return invalidArgument(where + ": std " + std::to_string(p.std[c]) + " of channel " +
                                   std::to_string(c));
    }
    const bool nchw = dims[1] == channels;
    const auto h = uint32_t(nchw ? dims[2] : dims[1]), w = uint32_t(nchw ? dims[3] : dims[2]);
    OnnxTensor t;
    t.elementType = 1;  // FLOAT
    t.dims = dims;
    const size_t perImage = size_t(h) * w * channels;
    std::vector<float> values(perImage);
    for (uint32_t y = 0; y < h; ++y) {
        const Sample sy = sampleAt(y, image.height, h, p.resize);
        for (uint32_t x = 0; x < w; ++x) {
            const Sample sx = sampleAt(x, image.width, w, p.resize);
            for (uint32_t c = 0; c < channels; ++c) {
                const uint32_t ic = p.bgr && channels == 3 ? 2 - c : c;
                auto px = [&](uint32_t yy, uint32_t xx) {
                    return float(image.pixels[(size_t(yy) * image.width + xx) * channels + ic]);
                };
                const float top = px(sy.lo, sx.lo) + (px(sy.lo, sx.hi) - px(sy.lo, sx.lo)) * sx.frac;
                const float bottom = px(sy.hi, sx.lo) + (px(sy.hi, sx.hi) - px(sy.hi, sx.lo)) * sx.frac;
                const float v = (top + (bottom - top) * sy.frac) / 255.0f;
                const size_t at = nchw ? (size_t(c) * h + y) * w + x : (size_t(y) * w + x) * channels + c;
                values[at] = (v - p.mean[c]) / p.std[c];
            }
        }
    }
    const auto batch = size_t(dims[0]);
    t.data.resize(batch * perImage * sizeof(float));
    for (size_t n = 0; n < batch; ++n)
        std::memcpy(t.data.data() + n * perImage * sizeof(float), values.data(), perImage * sizeof(float));
    return t;
}

}  // namespace npu::framework
