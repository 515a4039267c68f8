// PNG decoding and image preprocessing (framework/image.h): pixel values after decoding, resize,
// mean / std, BGR, NCHW and NHWC, and hostile files (truncated, huge declared size, not a PNG).
#include "npu/framework/image.h"

#include <png.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

using namespace npu;
using framework::Image;
using framework::ImagePreprocess;

namespace {

// An RGB PNG of w x h pixels, pixel (x, y) = (x * 10, y * 20, 7), through libpng's writer.
std::string encodePng(uint32_t w, uint32_t h) {
    std::vector<uint8_t> pixels;
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) pixels.insert(pixels.end(), {uint8_t(x * 10), uint8_t(y * 20), 7});
    }
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = w;
    image.height = h;
    image.format = PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    REQUIRE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr));
    std::string bytes(size, '\0');
    REQUIRE(png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels.data(), 0, nullptr));
    bytes.resize(size);
    return bytes;
}

void putBigEndian(std::string& s, size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) s[at + size_t(k)] = char((v >> (24 - 8 * k)) & 0xff);
}

std::vector<float> floats(const framework::OnnxTensor& t) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
}

}  // namespace

TEST_CASE("a PNG decodes to its pixels, as RGB or gray") {
    const std::string png = encodePng(4, 3);
    auto rgb = framework::decodePng(png, 3, "mem");
    REQUIRE(rgb);
    CHECK(rgb->width == 4);
    CHECK(rgb->height == 3);
    REQUIRE(rgb->pixels.size() == 36);
    CHECK(rgb->pixels[(2 * 4 + 3) * 3 + 0] == 30);  // x 3
    CHECK(rgb->pixels[(2 * 4 + 3) * 3 + 1] == 40);  // y 2
    CHECK(rgb->pixels[(2 * 4 + 3) * 3 + 2] == 7);
    auto gray = framework::decodePng(png, 1, "mem");
    REQUIRE(gray);
    CHECK(gray->pixels.size() == 12);
}

TEST_CASE("an image becomes an NCHW or NHWC float tensor: resized, normalized, in RGB or BGR order") {
    auto image = framework::decodePng(encodePng(4, 3), 3, "mem");
    REQUIRE(image);
    ImagePreprocess p;
    auto same = framework::imageTensor(*image, {1, 3, 3, 4}, p, "mem");  // no resize
    REQUIRE(same);
    auto v = floats(*same);
    REQUIRE(v.size() == 36);
    CHECK(v[0 * 12 + 2 * 4 + 3] == Approx(30 / 255.0f));  // R at (3, 2)
    CHECK(v[1 * 12 + 2 * 4 + 3] == Approx(40 / 255.0f));  // G
    CHECK(v[2 * 12 + 0] == Approx(7 / 255.0f));           // B

    p.mean = {0.5f, 0.5f, 0.5f};
    p.std = {0.5f, 0.5f, 0.5f};
    p.bgr = true;
    // [N, H, W, C] (dims[1] is not 1 or 3), batch 2, height 3 -> 6: row 4 samples y = 1.75.
    auto nhwc = framework::imageTensor(*image, {2, 6, 4, 3}, p, "mem");
    REQUIRE(nhwc);
    v = floats(*nhwc);
    REQUIRE(v.size() == 144);
    const size_t at = (4 * 4 + 3) * 3;
    CHECK(v[at + 0] == Approx((7 / 255.0f - 0.5f) / 0.5f));   // channel 0 is blue
    CHECK(v[at + 1] == Approx((35 / 255.0f - 0.5f) / 0.5f));  // green, interpolated
    CHECK(v[at + 2] == Approx((30 / 255.0f - 0.5f) / 0.5f));  // channel 2 is red
    CHECK(v[72 + at + 2] == v[at + 2]);                       // every batch entry the same image

    // Bilinear 4 -> 8 with half-pixel centres: x' = 3 samples x = 1.25 -> red 12.5; nearest takes x = 1.
    p = ImagePreprocess{};
    auto up = framework::imageTensor(*image, {1, 3, 3, 8}, p, "mem");
    REQUIRE(up);
    CHECK(floats(*up)[3] == Approx(12.5f / 255.0f));
    p.resize = ImagePreprocess::Resize::kNearest;
    auto nearest = framework::imageTensor(*image, {1, 3, 3, 8}, p, "mem");
    REQUIRE(nearest);
    CHECK(floats(*nearest)[3] == Approx(10 / 255.0f));

    // Shapes an image cannot feed, and a zero std.
    CHECK_FALSE(framework::imageTensor(*image, {1, 5, 3, 4}, p, "mem"));
    CHECK_FALSE(framework::imageTensor(*image, {3, 4}, p, "mem"));
    p.std = {1, 0, 1};
    auto zero = framework::imageTensor(*image, {1, 3, 3, 4}, p, "mem");
    REQUIRE_FALSE(zero);
    CHECK_THAT(zero.error().message, Catch::Contains("std"));
}

TEST_CASE("hostile PNG files are refused with the reason, before any large allocation") {
    const std::string png = encodePng(4, 3);
    auto truncated = framework::decodePng(png.substr(0, png.size() / 2), 3, "cut.png");
    REQUIRE_FALSE(truncated);
    CHECK(truncated.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    CHECK_THAT(truncated.error().message, Catch::StartsWith("cut.png: "));

    auto header = framework::decodePng(png.substr(0, 20), 3, "head.png");
    REQUIRE_FALSE(header);

    // IHDR (at byte 8: length, "IHDR", width, height, ...) claiming 100000 x 100000 pixels, with
    // its CRC recomputed so that only the size is wrong.
    std::string huge = png;
    putBigEndian(huge, 16, 100000);
    putBigEndian(huge, 20, 100000);
    putBigEndian(huge, 29, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(huge.data() + 12), 17)));
    auto big = framework::decodePng(huge, 3, "huge.png");
    REQUIRE_FALSE(big);
    CHECK_THAT(big.error().message, Catch::Contains("100000 x 100000") && Catch::Contains("at most"));

    auto text = framework::decodePng("not a png at all", 3, "text.png");
    REQUIRE_FALSE(text);
    CHECK_THAT(text.error().message, Catch::Contains("not a readable PNG"));
    CHECK_FALSE(framework::loadPngFile("/nonexistent/x.png", 3));
}
