// The detection family: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS and
// DETECTION_POSTPROCESSING here; ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT in
// detection_roi.cpp. Everything computes in float32 on dequantized values and converts once on
// store, as the NNAPI reference does. Where several boxes have equal scores, the order of the
// NNAPI reference's in-place selection is reproduced (it decides which box survives and the
// output order), and its sorts are made stable.
//
// BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS have outputs whose length depends on the input values:
// preparation defers them unless those inputs are constants, and at execution `prepare` runs the
// selection to size the outputs and `execute` runs it again to fill them.
#include "detection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace npu::ref::ops {

namespace detection {

Result<float> floatScalar(OperationContext& ctx, size_t i, OperandType tensor) {
    const OperandType type = floatScalarType(tensor);
    NPU_TRY(ctx.expectType(i, type));
    if (!ctx.hasValue(i)) return ctx.deferred();
    return loadFloat(type, ctx.input(i).data(), 0);
}

Status expectInputTypes(OperationContext& ctx, size_t first, std::initializer_list<OperandType> types) {
    size_t i = first;
    for (OperandType t : types) NPU_TRY(ctx.expectType(i++, t));
    return {};
}

Status expectScalarValues(OperationContext& ctx, std::initializer_list<size_t> inputs) {
    for (size_t i : inputs) NPU_TRY(ctx.expectValue(i));
    for (size_t i : inputs) {
        if (!ctx.hasValue(i)) return ctx.deferred();
    }
    return {};
}

Status expectBoxQuantization(OperationContext& ctx, size_t i, bool output) {
    const RuntimeOperand& op = output ? ctx.output(i) : ctx.input(i);
    if (op.type != OperandType::TENSOR_QUANT16_ASYMM) return {};
    if (op.scale != kBoxScale || op.zeroPoint != 0) {
        return ctx.error(std::string(output ? "output " : "input ") + std::to_string(i) +
                         ": quantized boxes must have scale 0.125 and zero point 0, got scale " +
                         std::to_string(op.scale) + ", zero point " + std::to_string(op.zeroPoint));
    }
    return {};
}

std::vector<float> loadReals(const RuntimeOperand& op) {
    std::vector<float> v(elementCount(op.dims));
    for (size_t i = 0; i < v.size(); ++i) v[i] = loadReal(op, i);
    return v;
}

void storeConverted(RuntimeOperand& op, size_t i, float v) {
    if (isFloatType(op.type)) {
        storeFloat(op.type, op.buffer.data(), i, v);
        return;
    }
    const QuantRange range = quantTypeRange(op.type);
    const float q = std::round(v / op.scale + float(op.zeroPoint));
    const int32_t clamped = !(q >= float(range.min)) ? range.min
                            : q > float(range.max)   ? range.max
                                                     : int32_t(q);
    storeQuant(op.type, op.buffer.data(), i, clamped);
}

}  // namespace detection

namespace {

using detection::floatScalar;
using detection::kBoxScale;

bool isScoreType(OperandType t) {
    return typeIn(t, {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16,
                      OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}
// Boxes go with scores of type `scores`: the same float type, or QUANT16_ASYMM for quantized scores.
OperandType boxTypeFor(OperandType scores) {
    return isQuant8Type(scores) ? OperandType::TENSOR_QUANT16_ASYMM : scores;
}

// Boxes are (x1, y1, x2, y2).
float intersectionOverUnion(const float* a, const float* b) {
    const float areaA = (a[2] - a[0]) * (a[3] - a[1]);
    const float areaB = (b[2] - b[0]) * (b[3] - b[1]);
    const float w = std::max(std::min(a[2], b[2]) - std::max(a[0], b[0]), 0.0f);
    const float h = std::max(std::min(a[3], b[3]) - std::max(a[1], b[1]), 0.0f);
    const float intersection = w * h;
    return intersection / (areaA + areaB - intersection);
}

// Applies (dx, dy, dw, dh) to the corner box `roi` (centre shift in box units, log-scale size)
// and clips the result to [0, width] x [0, height].
void transformBox(const float* roi, const float* delta, float imageHeight, float imageWidth, float* out) {
    const float w = roi[2] - roi[0], h = roi[3] - roi[1];
    const float cx = (roi[0] + roi[2]) / 2, cy = (roi[1] + roi[3]) / 2;
    const float nw = std::exp(delta[2]) * w, nh = std::exp(delta[3]) * h;
    const float nx = cx + delta[0] * w, ny = cy + delta[1] * h;
    const float corners[4] = {nx - nw / 2, ny - nh / 2, nx + nw / 2, ny + nh / 2};
    out[0] = std::min(std::max(corners[0], 0.0f), imageWidth);
    out[1] = std::min(std::max(corners[1], 0.0f), imageHeight);
    out[2] = std::min(std::max(corners[2], 0.0f), imageWidth);
    out[3] = std::min(std::max(corners[3], 0.0f), imageHeight);
}

// Greedy non-maximum suppression over candidates[begin, end): the best remaining candidate (the
// first one on ties) moves to the front and is kept; every other candidate's score is multiplied
// by kernel(IoU with it) and it is dropped when `drop(score)` says so. A dropped candidate trades
// places with the last live one, as in the NNAPI reference, which fixes the order among equals.
// At most `limit` candidates are kept (all when negative); returns the end of the kept range.
using BoxOf = std::function<const float*(uint32_t)>;
size_t suppress(std::vector<uint32_t>& candidates, size_t begin, size_t end, std::vector<float>& scores,
                int32_t limit, const BoxOf& boxOf, const std::function<float(float)>& kernel,
                const std::function<bool(float)>& drop) {
    const size_t maxKept = limit < 0 ? end - begin : size_t(limit);
    size_t kept = 0;
    while (begin < end && kept < maxKept) {
        size_t best = begin;
        for (size_t i = begin + 1; i < end; ++i) {
            if (scores[candidates[best]] < scores[candidates[i]]) best = i;
        }
        std::swap(candidates[best], candidates[begin]);
        const float* chosen = boxOf(candidates[begin]);
        for (size_t i = begin + 1; i < end; ++i) {
            const uint32_t c = candidates[i];
            scores[c] *= kernel(intersectionOverUnion(boxOf(c), chosen));
            if (drop(scores[c])) {
                std::swap(candidates[i], candidates[end - 1]);
                --end;
                --i;
            }
        }
        ++begin;
        ++kept;
    }
    return begin;
}

// Hard NMS: a candidate overlapping a kept one with IoU >= threshold is dropped.
size_t hardSuppress(std::vector<uint32_t>& candidates, size_t begin, size_t end,
                    const std::vector<float>& scores, int32_t limit, float iouThreshold, const BoxOf& boxOf) {
    std::vector<float> work = scores;  // hard NMS never changes the scores
    bool overlapped = false;
    return suppress(
        candidates, begin, end, work, limit, boxOf,
        [&](float iou) {
            overlapped = iou >= iouThreshold;
            return 1.0f;
        },
        [&](float) { return overlapped; });
}

// Per class (class 0, the background, excluded): candidates above the score threshold, suppressed
// by `perClassNms`; then all classes together, best first, cut to `total`.
std::vector<uint32_t> multiClassSuppress(
    std::vector<float>& scores, uint32_t numBoxes, uint32_t numClasses, float scoreThreshold, int32_t total,
    const std::function<size_t(std::vector<uint32_t>&, size_t, size_t)>& perClassNms) {
    std::vector<uint32_t> selected;
    for (uint32_t c = 1; c < numClasses; ++c) {
        const size_t begin = selected.size();
        for (uint32_t b = 0; b < numBoxes; ++b) {
            if (scores[b * numClasses + c] > scoreThreshold) selected.push_back(b * numClasses + c);
        }
        selected.resize(perClassNms(selected, begin, selected.size()));
    }
    std::stable_sort(selected.begin(), selected.end(),
                     [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
    if (total >= 0 && selected.size() > size_t(total)) selected.resize(size_t(total));
    return selected;
}

// AXIS_ALIGNED_BBOX_TRANSFORM ---------------------------------------------------------------------

bool supportsBoxTransform(const hal::Subgraph& sg, const hal::Operation& op) {
    const OperandType rois = operandType(sg, op, 0), deltas = operandType(sg, op, 1);
    if (isFloatType(rois)) return deltas == rois && operandType(sg, op, 3) == rois;
    return rois == OperandType::TENSOR_QUANT16_ASYMM && isQuant8Type(deltas) &&
           operandType(sg, op, 3) == OperandType::TENSOR_QUANT16_ASYMM;
}

Status prepareBoxTransform(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(4, 4));
    NPU_TRY(ctx.expectOutputCount(1));
    const OperandType rois = ctx.inputType(0);
    if (isFloatType(rois)) {
        NPU_TRY(detection::expectInputTypes(ctx, 1, {rois, OperandType::TENSOR_INT32, rois}));
    } else if (rois == OperandType::TENSOR_QUANT16_ASYMM) {
        if (!isQuant8Type(ctx.inputType(1))) return ctx.error("input 1 (deltas) must be a quant8 tensor");
        NPU_TRY(detection::expectInputTypes(ctx, 2,
                                            {OperandType::TENSOR_INT32, OperandType::TENSOR_QUANT16_ASYMM}));
    } else {
        return ctx.error("input 0 has an unsupported type");
    }
    for (size_t i : {0, 1, 2, 3}) NPU_TRY(ctx.expectValue(i));  // an omitted tensor has no data
    NPU_TRY(ctx.expectRank(0, 2));
    NPU_TRY(ctx.expectRank(1, 2));
    NPU_TRY(ctx.expectRank(2, 1));
    NPU_TRY(ctx.expectRank(3, 2));
    const uint32_t numRois = ctx.inputDims(0)[0];
    const uint32_t width = ctx.inputDims(1)[1];
    if (ctx.inputDims(0)[1] != 4) return ctx.error("input 0 (boxes) must have shape [num_rois, 4]");
    if (ctx.inputDims(1)[0] != numRois || width == 0 || width % 4 != 0) {
        return ctx.error("input 1 (deltas) must have shape [" + std::to_string(numRois) +
                         ", 4 * num_classes], got " + dimsToString(ctx.inputDims(1)));
    }
    if (ctx.inputDims(2)[0] != numRois) {
        return ctx.error("input 2 (batch indices) must have one entry per box");
    }
    if (ctx.inputDims(3)[0] == 0 || ctx.inputDims(3)[1] != 2) {
        return ctx.error("input 3 (image sizes) must have shape [batches > 0, 2]");
    }
    NPU_TRY(detection::expectBoxQuantization(ctx, 0, false));
    NPU_TRY(detection::expectBoxQuantization(ctx, 3, false));
    if (ctx.outputType(0) != rois) return ctx.error("output 0 type differs from input 0");
    NPU_TRY(detection::expectBoxQuantization(ctx, 0, true));
    return ctx.setOutputShape(0, {numRois, width});
}

Status executeBoxTransform(OperationContext& ctx) {
    const std::vector<float> rois = detection::loadReals(ctx.input(0));
    const std::vector<float> deltas = detection::loadReals(ctx.input(1));
    const std::vector<float> images = detection::loadReals(ctx.input(3));
    const int32_t* batches = ctx.inputData<int32_t>(2);
    const uint32_t numRois = ctx.inputDims(0)[0], numClasses = ctx.inputDims(1)[1] / 4;
    const uint32_t numBatches = ctx.inputDims(3)[0];
    RuntimeOperand& out = ctx.output(0);
    for (uint32_t r = 0; r < numRois; ++r) {
        const float* roi = rois.data() + size_t(r) * 4;
        if (batches[r] < 0 || uint32_t(batches[r]) >= numBatches) {
            return ctx.error("input 2: batch index " + std::to_string(batches[r]) + " of box " +
                             std::to_string(r) + " is outside 0.." + std::to_string(numBatches - 1));
        }
        if (!(roi[0] <= roi[2]) || !(roi[1] <= roi[3])) {
            return ctx.error("input 0: box " + std::to_string(r) + " has x2 < x1 or y2 < y1");
        }
        const float* image = images.data() + size_t(batches[r]) * 2;
        for (uint32_t c = 0; c < numClasses; ++c) {
            const size_t at = (size_t(r) * numClasses + c) * 4;
            float box[4];
            transformBox(roi, deltas.data() + at, image[0], image[1], box);
            for (size_t k = 0; k < 4; ++k) detection::storeConverted(out, at + k, box[k]);
        }
    }
    return {};
}

// BOX_WITH_NMS_LIMIT ------------------------------------------------------------------------------

bool supportsBoxNms(const hal::Subgraph& sg, const hal::Operation& op) {
    const OperandType scores = operandType(sg, op, 0);
    return isScoreType(scores) && operandType(sg, op, 1) == boxTypeFor(scores);
}

struct Detection {
    uint32_t index;  // into scores: box * numClasses + class
    float score;     // after soft suppression
    int32_t batch;
};

// Runs the selection; fails on malformed boxes or parameters.
Result<std::vector<Detection>> boxNmsSelect(OperationContext& ctx) {
    const float scoreThreshold = loadFloat(ctx.inputType(3), ctx.input(3).data(), 0);
    const int32_t maxDetections = ctx.scalar<int32_t>(4);
    const int32_t kernelKind = ctx.scalar<int32_t>(5);
    const float iouThreshold = loadFloat(ctx.inputType(6), ctx.input(6).data(), 0);
    const float sigma = loadFloat(ctx.inputType(7), ctx.input(7).data(), 0);
    const float nmsScoreThreshold = loadFloat(ctx.inputType(8), ctx.input(8).data(), 0);
    std::function<float(float)> kernel;
    switch (kernelKind) {
        case 0:
            kernel = [=](float iou) { return iou < iouThreshold ? 1.0f : 0.0f; };
            break;
        case 1:
            kernel = [=](float iou) { return iou < iouThreshold ? 1.0f : 1.0f - iou; };
            break;
        default:
            kernel = [=](float iou) { return std::exp(-1.0f * iou * iou / sigma); };
            break;
    }
    const auto drop = [=](float score) { return score < nmsScoreThreshold; };

    std::vector<float> scores = detection::loadReals(ctx.input(0));
    const std::vector<float> boxes = detection::loadReals(ctx.input(1));
    const int32_t* batches = ctx.inputData<int32_t>(2);
    const uint32_t numRois = ctx.inputDims(0)[0], numClasses = ctx.inputDims(0)[1];
    for (uint32_t i = 0; i < numRois * numClasses; ++i) {
        const float* box = boxes.data() + size_t(i) * 4;
        if (!(box[0] <= box[2]) || !(box[1] <= box[3])) {
            return ctx.error("input 1: box " + std::to_string(i / numClasses) + " of class " +
                             std::to_string(i % numClasses) + " has x2 < x1 or y2 < y1");
        }
    }
    std::vector<Detection> result;
    // Boxes of one image are consecutive: each run of equal batch indices is one image.
    for (uint32_t first = 0; first < numRois;) {
        uint32_t last = first + 1;
        while (last < numRois && batches[last] == batches[first]) ++last;
        const uint32_t offset = first * numClasses, count = last - first;
        std::vector<float> runScores(scores.begin() + offset, scores.begin() + (offset + count * numClasses));
        const BoxOf boxOf = [&](uint32_t i) { return boxes.data() + (size_t(offset) + i) * 4; };
        std::vector<uint32_t> kept =
            multiClassSuppress(runScores, count, numClasses, scoreThreshold, maxDetections,
                               [&](std::vector<uint32_t>& c, size_t b, size_t e) {
                                   return suppress(c, b, e, runScores, maxDetections, boxOf, kernel, drop);
                               });
        // Output order: by class, then by score.
        std::stable_sort(kept.begin(), kept.end(), [&](uint32_t a, uint32_t b) {
            const uint32_t ca = a % numClasses, cb = b % numClasses;
            return ca == cb ? runScores[a] > runScores[b] : ca < cb;
        });
        for (uint32_t k : kept) result.push_back({offset + k, runScores[k], batches[first]});
        first = last;
    }
    return result;
}

Status prepareBoxNms(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(9, 9));
    NPU_TRY(ctx.expectOutputCount(4));
    const OperandType type = ctx.inputType(0);
    if (!isScoreType(type)) return ctx.error("input 0 has an unsupported type");
    const OperandType floatScalar = detection::floatScalarType(type);
    NPU_TRY(detection::expectInputTypes(
        ctx, 1,
        {boxTypeFor(type), OperandType::TENSOR_INT32, floatScalar, OperandType::INT32, OperandType::INT32,
         floatScalar, floatScalar, floatScalar}));
    for (size_t i : {0, 1, 2}) NPU_TRY(ctx.expectValue(i));  // an omitted tensor has no data
    NPU_TRY(ctx.expectRank(0, 2));
    NPU_TRY(ctx.expectRank(1, 2));
    NPU_TRY(ctx.expectRank(2, 1));
    const uint32_t numRois = ctx.inputDims(0)[0], numClasses = ctx.inputDims(0)[1];
    if (numClasses < 2) {
        return ctx.error("input 0 (scores) needs at least 2 classes (class 0 is the background)");
    }
    if (ctx.inputDims(1)[0] != numRois || ctx.inputDims(1)[1] != numClasses * 4) {
        return ctx.error("input 1 (boxes) must have shape [" + std::to_string(numRois) + ", " +
                         std::to_string(numClasses * 4) + "], got " + dimsToString(ctx.inputDims(1)));
    }
    if (ctx.inputDims(2)[0] != numRois) {
        return ctx.error("input 2 (batch indices) must have one entry per box");
    }
    NPU_TRY(detection::expectBoxQuantization(ctx, 1, false));
    NPU_TRY(detection::expectScalarValues(ctx, {3, 4, 5, 6, 7, 8}));
    const int32_t kernel = ctx.scalar<int32_t>(5);
    if (kernel < 0 || kernel > 2) {
        return ctx.error("input 5: NMS kernel " + std::to_string(kernel) +
                         " is not 0 (hard), 1 (linear) or 2 (gaussian)");
    }
    const float iouThreshold = loadFloat(ctx.inputType(6), ctx.input(6).data(), 0);
    const float sigma = loadFloat(ctx.inputType(7), ctx.input(7).data(), 0);
    if (!(iouThreshold >= 0 && iouThreshold <= 1)) {
        return ctx.error("input 6: IoU threshold must be in [0, 1]");
    }
    if (kernel == 2 && !(sigma > 0)) {
        return ctx.error("input 7: sigma must be positive for the gaussian kernel");
    }
    if (ctx.outputType(0) != type) return ctx.error("output 0 (scores) type differs from input 0");
    if (ctx.outputType(1) != ctx.inputType(1)) return ctx.error("output 1 (boxes) type differs from input 1");
    if (ctx.outputType(2) != OperandType::TENSOR_INT32 || ctx.outputType(3) != OperandType::TENSOR_INT32) {
        return ctx.error("outputs 2 (classes) and 3 (batch indices) must be TENSOR_INT32");
    }
    NPU_TRY(detection::expectBoxQuantization(ctx, 1, true));
    uint32_t count = 0;
    if (numRois > 0) {
        for (size_t i : {0, 1, 2}) {
            if (!ctx.hasValue(i)) return ctx.deferred();
        }
        count = uint32_t(NPU_TRY(boxNmsSelect(ctx)).size());
    }
    NPU_TRY(ctx.setOutputShape(0, {count}));
    NPU_TRY(ctx.setOutputShape(1, {count, 4}));
    NPU_TRY(ctx.setOutputShape(2, {count}));
    return ctx.setOutputShape(3, {count});
}

Status executeBoxNms(OperationContext& ctx) {
    const std::vector<Detection> kept = NPU_TRY(boxNmsSelect(ctx));
    const RuntimeOperand& boxes = ctx.input(1);
    const uint32_t numClasses = ctx.inputDims(0)[1];
    const size_t boxBytes = 4 * hal::elementSize(boxes.type);
    RuntimeOperand& scoresOut = ctx.output(0);
    RuntimeOperand& boxesOut = ctx.output(1);
    int32_t* classes = ctx.outputData<int32_t>(2);
    int32_t* batchesOut = ctx.outputData<int32_t>(3);
    for (size_t i = 0; i < kept.size(); ++i) {
        detection::storeConverted(scoresOut, i, kept[i].score);
        std::memcpy(boxesOut.buffer.data() + i * boxBytes, boxes.data() + size_t(kept[i].index) * boxBytes,
                    boxBytes);
        classes[i] = int32_t(kept[i].index % numClasses);
        batchesOut[i] = kept[i].batch;
    }
    return {};
}

// GENERATE_PROPOSALS ------------------------------------------------------------------------------

bool supportsProposals(const hal::Subgraph& sg, const hal::Operation& op) {
    const OperandType scores = operandType(sg, op, 0);
    if (isFloatType(scores)) {
        return operandType(sg, op, 1) == scores && operandType(sg, op, 2) == scores &&
               operandType(sg, op, 3) == scores;
    }
    return isQuant8Type(scores) && operandType(sg, op, 1) == scores &&
           operandType(sg, op, 2) == OperandType::TENSOR_QUANT16_SYMM &&
           operandType(sg, op, 3) == OperandType::TENSOR_QUANT16_ASYMM;
}

struct Proposals {
    std::vector<float> scores, boxes;
    std::vector<int32_t> batches;
};

Result<Proposals> generateProposals(OperationContext& ctx) {
    const bool nchw = ctx.scalar<uint8_t>(10) != 0;
    const Layout4 scoreLayout = layoutOf(ctx.inputDims(0), nchw);
    const Layout4 deltaLayout = layoutOf(ctx.inputDims(1), nchw);
    const float heightStride = loadFloat(ctx.inputType(4), ctx.input(4).data(), 0);
    const float widthStride = loadFloat(ctx.inputType(5), ctx.input(5).data(), 0);
    const int32_t preNms = ctx.scalar<int32_t>(6), postNms = ctx.scalar<int32_t>(7);
    const float iouThreshold = loadFloat(ctx.inputType(8), ctx.input(8).data(), 0);
    const float minSize = loadFloat(ctx.inputType(9), ctx.input(9).data(), 0);
    const std::vector<float> scores = detection::loadReals(ctx.input(0));
    const std::vector<float> deltas = detection::loadReals(ctx.input(1));
    const std::vector<float> anchors = detection::loadReals(ctx.input(2));
    const std::vector<float> images = detection::loadReals(ctx.input(3));
    const uint32_t height = scoreLayout.h, width = scoreLayout.w, numAnchors = scoreLayout.c;
    const uint32_t perImage = height * width * numAnchors;
    for (uint32_t a = 0; a < numAnchors; ++a) {
        const float* anchor = anchors.data() + size_t(a) * 4;
        if (!(anchor[0] <= anchor[2]) || !(anchor[1] <= anchor[3])) {
            return ctx.error("input 2: anchor " + std::to_string(a) + " has x2 < x1 or y2 < y1");
        }
    }
    Proposals out;
    std::vector<float> boxes(size_t(perImage) * 4), imageScores(perImage);
    for (uint32_t b = 0; b < scoreLayout.n; ++b) {
        const float imageHeight = images[size_t(b) * 2], imageWidth = images[size_t(b) * 2 + 1];
        // Candidates in (row, column, anchor) order: each anchor shifted to its cell, then moved by
        // its deltas and clipped to the image.
        for (uint32_t h = 0; h < height; ++h) {
            for (uint32_t w = 0; w < width; ++w) {
                for (uint32_t a = 0; a < numAnchors; ++a) {
                    const size_t i = (size_t(h) * width + w) * numAnchors + a;
                    const float* anchor = anchors.data() + size_t(a) * 4;
                    const float shiftX = float(w) * widthStride, shiftY = float(h) * heightStride;
                    const float shifted[4] = {anchor[0] + shiftX, anchor[1] + shiftY, anchor[2] + shiftX,
                                              anchor[3] + shiftY};
                    float delta[4];
                    for (uint32_t k = 0; k < 4; ++k) delta[k] = deltas[deltaLayout.index(b, h, w, a * 4 + k)];
                    transformBox(shifted, delta, imageHeight, imageWidth, boxes.data() + i * 4);
                    imageScores[i] = scores[scoreLayout.index(b, h, w, a)];
                }
            }
        }
        std::vector<uint32_t> candidates(perImage);
        std::iota(candidates.begin(), candidates.end(), 0u);
        if (preNms > 0 && size_t(preNms) < candidates.size()) {
            std::stable_sort(candidates.begin(), candidates.end(),
                             [&](uint32_t x, uint32_t y) { return imageScores[x] > imageScores[y]; });
            candidates.resize(size_t(preNms));
        }
        // Boxes must be larger than min_size and have their centre inside the image.
        std::erase_if(candidates, [&](uint32_t i) {
            const float* box = boxes.data() + size_t(i) * 4;
            const float w = box[2] - box[0], h = box[3] - box[1];
            return !(w > minSize && h > minSize && box[0] + w / 2.0f < imageWidth &&
                     box[1] + h / 2.0f < imageHeight);
        });
        const BoxOf boxOf = [&](uint32_t i) { return boxes.data() + size_t(i) * 4; };
        candidates.resize(
            hardSuppress(candidates, 0, candidates.size(), imageScores, postNms, iouThreshold, boxOf));
        for (uint32_t i : candidates) {
            out.scores.push_back(imageScores[i]);
            out.boxes.insert(out.boxes.end(), boxes.begin() + i * 4, boxes.begin() + (i + 1) * 4);
            out.batches.push_back(int32_t(b));
        }
    }
    return out;
}

Status prepareProposals(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(11, 11));
    NPU_TRY(ctx.expectOutputCount(3));
    const OperandType type = ctx.inputType(0);
    if (!isScoreType(type)) return ctx.error("input 0 has an unsupported type");
    const OperandType fs = detection::floatScalarType(type);
    const bool quant = isQuant8Type(type);
    NPU_TRY(detection::expectInputTypes(ctx, 1,
                                        {type, quant ? OperandType::TENSOR_QUANT16_SYMM : type,
                                         quant ? OperandType::TENSOR_QUANT16_ASYMM : type, fs, fs,
                                         OperandType::INT32, OperandType::INT32, fs, fs, OperandType::BOOL}));
    NPU_TRY(detection::expectScalarValues(ctx, {4, 5, 6, 7, 8, 9, 10}));
    const bool nchw = ctx.scalar<uint8_t>(10) != 0;
    for (size_t i : {0, 1, 2, 3}) NPU_TRY(ctx.expectValue(i));  // an omitted tensor has no data
    NPU_TRY(ctx.expectRank(0, 4));
    NPU_TRY(ctx.expectRank(1, 4));
    NPU_TRY(ctx.expectRank(2, 2));
    NPU_TRY(ctx.expectRank(3, 2));
    const Layout4 s = layoutOf(ctx.inputDims(0), nchw), d = layoutOf(ctx.inputDims(1), nchw);
    if (s.n == 0 || s.h == 0 || s.w == 0 || s.c == 0) return ctx.error("input 0 (scores) must not be empty");
    if (d.n != s.n || d.h != s.h || d.w != s.w || d.c != s.c * 4) {
        return ctx.error("input 1 (deltas) " + dimsToString(ctx.inputDims(1)) +
                         " does not match the scores: 4 values per anchor are needed");
    }
    if (ctx.inputDims(2)[0] != s.c || ctx.inputDims(2)[1] != 4) {
        return ctx.error("input 2 (anchors) must have shape [" + std::to_string(s.c) + ", 4]");
    }
    if (ctx.inputDims(3)[0] != s.n || ctx.inputDims(3)[1] != 2) {
        return ctx.error("input 3 (image sizes) must have shape [" + std::to_string(s.n) + ", 2]");
    }
    if (quant && (ctx.input(2).scale != kBoxScale || ctx.input(2).zeroPoint != 0)) {
        return ctx.error("input 2: quantized anchors must have scale 0.125 and zero point 0");
    }
    NPU_TRY(detection::expectBoxQuantization(ctx, 3, false));
    const float heightStride = loadFloat(fs, ctx.input(4).data(), 0),
                widthStride = loadFloat(fs, ctx.input(5).data(), 0);
    if (!(heightStride > 0) || !(widthStride > 0)) {
        return ctx.error("inputs 4 and 5: strides must be positive");
    }
    if (ctx.outputType(0) != type) return ctx.error("output 0 (scores) type differs from input 0");
    if (ctx.outputType(1) != ctx.inputType(3)) return ctx.error("output 1 (boxes) type differs from input 3");
    if (ctx.outputType(2) != OperandType::TENSOR_INT32) {
        return ctx.error("output 2 (batch indices) must be TENSOR_INT32");
    }
    NPU_TRY(detection::expectBoxQuantization(ctx, 1, true));
    for (size_t i : {0, 1, 2, 3}) {
        if (!ctx.hasValue(i)) return ctx.deferred();
    }
    const uint32_t count = uint32_t(NPU_TRY(generateProposals(ctx)).scores.size());
    NPU_TRY(ctx.setOutputShape(0, {count}));
    NPU_TRY(ctx.setOutputShape(1, {count, 4}));
    return ctx.setOutputShape(2, {count});
}

Status executeProposals(OperationContext& ctx) {
    const Proposals p = NPU_TRY(generateProposals(ctx));
    for (size_t i = 0; i < p.scores.size(); ++i) {
        detection::storeConverted(ctx.output(0), i, p.scores[i]);
        for (size_t k = 0; k < 4; ++k) {
            detection::storeConverted(ctx.output(1), i * 4 + k, p.boxes[i * 4 + k]);
        }
        ctx.outputData<int32_t>(2)[i] = p.batches[i];
    }
    return {};
}

// DETECTION_POSTPROCESSING ------------------------------------------------------------------------

bool supportsPostprocess(const hal::Subgraph& sg, const hal::Operation& op) {
    const OperandType scores = operandType(sg, op, 0);
    return isFloatType(scores) && operandType(sg, op, 1) == scores && operandType(sg, op, 2) == scores;
}

struct PostprocessParams {
    float scaleY, scaleX, scaleH, scaleW;
    bool regular;
    int32_t maxDetections, maxClassesPerDetection, maxPerClass;
    float scoreThreshold, iouThreshold;
    bool backgroundInLabel;
};

PostprocessParams postprocessParams(OperationContext& ctx) {
    auto f = [&](size_t i) { return loadFloat(ctx.inputType(i), ctx.input(i).data(), 0); };
    return {f(3),
            f(4),
            f(5),
            f(6),
            ctx.scalar<uint8_t>(7) != 0,
            ctx.scalar<int32_t>(8),
            ctx.scalar<int32_t>(9),
            ctx.scalar<int32_t>(10),
            f(11),
            f(12),
            ctx.scalar<uint8_t>(13) != 0};
}

Status preparePostprocess(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(14, 14));
    NPU_TRY(ctx.expectOutputCount(4));
    const OperandType type = ctx.inputType(0);
    if (!isFloatType(type)) return ctx.error("input 0 must be TENSOR_FLOAT32 or TENSOR_FLOAT16");
    const OperandType fs = detection::floatScalarType(type);
    NPU_TRY(detection::expectInputTypes(ctx, 1,
                                        {type, type, fs, fs, fs, fs, OperandType::BOOL, OperandType::INT32,
                                         OperandType::INT32, OperandType::INT32, fs, fs, OperandType::BOOL}));
    NPU_TRY(detection::expectScalarValues(ctx, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
    for (size_t i : {0, 1, 2}) NPU_TRY(ctx.expectValue(i));  // an omitted tensor has no data
    NPU_TRY(ctx.expectRank(0, 3));
    NPU_TRY(ctx.expectRank(1, 3));
    NPU_TRY(ctx.expectRank(2, 2));
    const uint32_t batches = ctx.inputDims(0)[0], numAnchors = ctx.inputDims(0)[1],
                   numClasses = ctx.inputDims(0)[2];
    const auto& deltas = ctx.inputDims(1);
    if (deltas[0] != batches || deltas[1] != numAnchors || deltas[2] < 4) {
        return ctx.error("input 1 (deltas) must have shape [" + std::to_string(batches) + ", " +
                         std::to_string(numAnchors) + ", >= 4], got " + dimsToString(deltas));
    }
    if (ctx.inputDims(2)[0] != numAnchors || ctx.inputDims(2)[1] != 4) {
        return ctx.error("input 2 (anchors) must have shape [" + std::to_string(numAnchors) + ", 4]");
    }
    if (numClasses < 2) {
        return ctx.error("input 0 (scores) needs at least 2 classes (class 0 is the background)");
    }
    const PostprocessParams p = postprocessParams(ctx);
    if (!(p.scaleY > 0) || !(p.scaleX > 0) || !(p.scaleH > 0) || !(p.scaleW > 0)) {
        return ctx.error("inputs 3..6: the box scales must be positive");
    }
    if (!(p.scoreThreshold >= 0) || !(p.iouThreshold >= 0)) {
        return ctx.error("inputs 11 and 12: score and IoU thresholds must not be negative");
    }
    if (p.maxDetections <= 0) return ctx.error("input 8: the maximum number of detections must be positive");
    if (p.regular && p.maxPerClass <= 0) return ctx.error("input 10: detections per class must be positive");
    if (!p.regular && p.maxClassesPerDetection <= 0) {
        return ctx.error("input 9: classes per detection must be positive");
    }
    const uint64_t slots64 =
        uint64_t(p.maxDetections) * (p.regular ? 1u : uint64_t(p.maxClassesPerDetection));
    if (slots64 > (uint64_t{1} << 24)) {
        return ctx.error("inputs 8 and 9: " + std::to_string(slots64) +
                         " detection slots per image are too many");
    }
    const uint32_t slots = uint32_t(slots64);
    if (ctx.outputType(0) != type || ctx.outputType(1) != type) {
        return ctx.error("outputs 0 (scores) and 1 (boxes) must have the type of input 0");
    }
    if (ctx.outputType(2) != OperandType::TENSOR_INT32 || ctx.outputType(3) != OperandType::TENSOR_INT32) {
        return ctx.error("outputs 2 (classes) and 3 (detection counts) must be TENSOR_INT32");
    }
    NPU_TRY(ctx.setOutputShape(0, {batches, slots}));
    NPU_TRY(ctx.setOutputShape(1, {batches, slots, 4}));
    NPU_TRY(ctx.setOutputShape(2, {batches, slots}));
    return ctx.setOutputShape(3, {batches});
}

// One batch's anchors decoded with its box deltas into (y1, x1, y2, x2) boxes.
void decodeAnchorBoxes(const PostprocessParams& p, const float* anchors, const float* deltas,
                       uint32_t numAnchors, uint32_t encoding, float* boxes) {
    for (uint32_t a = 0; a < numAnchors; ++a) {
        const float* anchor = anchors + size_t(a) * 4;  // (y centre, x centre, height, width)
        const float* d = deltas + size_t(a) * encoding;
        const float yCentre = anchor[0] + anchor[2] * d[0] / p.scaleY;
        const float xCentre = anchor[1] + anchor[3] * d[1] / p.scaleX;
        const float halfH = anchor[2] * std::exp(d[2] / p.scaleH) * 0.5f;
        const float halfW = anchor[3] * std::exp(d[3] / p.scaleW) * 0.5f;
        float* box = boxes + size_t(a) * 4;
        box[0] = yCentre - halfH;
        box[1] = xCentre - halfW;
        box[2] = yCentre + halfH;
        box[3] = xCentre + halfW;
    }
}

// One kept detection of DETECTION_POSTPROCESSING: its score, anchor and class.
struct PostprocessDetection {
    float score;
    uint32_t anchor, cls;
};

// Regular NMS: per class, over the scores above the threshold.
std::vector<PostprocessDetection> regularDetections(const PostprocessParams& p, std::vector<float>& scores,
                                                    const std::vector<float>& boxes, uint32_t numAnchors,
                                                    uint32_t numClasses) {
    const BoxOf boxOf = [&](uint32_t i) { return boxes.data() + size_t(i / numClasses) * 4; };
    const std::vector<uint32_t> kept = multiClassSuppress(
        scores, numAnchors, numClasses, p.scoreThreshold, p.maxDetections,
        [&](std::vector<uint32_t>& c, size_t begin, size_t end) {
            return hardSuppress(c, begin, end, scores, p.maxPerClass, p.iouThreshold, boxOf);
        });
    std::vector<PostprocessDetection> out;
    for (uint32_t i : kept) out.push_back({scores[i], i / numClasses, i % numClasses});
    return out;
}

// Fast NMS: one pass over the anchors by their best non-background score, then the best classes
// of each kept anchor.
std::vector<PostprocessDetection> fastDetections(const PostprocessParams& p, const std::vector<float>& scores,
                                                 const std::vector<float>& boxes, uint32_t numAnchors,
                                                 uint32_t numClasses) {
    const uint32_t classesPerAnchor = std::min<uint32_t>(numClasses - 1, uint32_t(p.maxClassesPerDetection));
    std::vector<float> best(numAnchors);
    std::vector<uint32_t> candidates;
    for (uint32_t a = 0; a < numAnchors; ++a) {
        const float* s = scores.data() + size_t(a) * numClasses;
        best[a] = *std::max_element(s + 1, s + numClasses);
        if (best[a] > p.scoreThreshold) candidates.push_back(a);
    }
    const BoxOf boxOf = [&](uint32_t i) { return boxes.data() + size_t(i) * 4; };
    candidates.resize(
        hardSuppress(candidates, 0, candidates.size(), best, p.maxDetections, p.iouThreshold, boxOf));
    std::vector<PostprocessDetection> out;
    for (uint32_t a : candidates) {
        const float* s = scores.data() + size_t(a) * numClasses;
        std::vector<uint32_t> order(numClasses - 1);
        std::iota(order.begin(), order.end(), 1u);
        std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return s[x] > s[y]; });
        for (uint32_t c = 0; c < classesPerAnchor; ++c) out.push_back({s[order[c]], a, order[c]});
    }
    return out;
}

Status executePostprocess(OperationContext& ctx) {
    const PostprocessParams p = postprocessParams(ctx);
    const std::vector<float> scores = detection::loadReals(ctx.input(0));
    const std::vector<float> deltas = detection::loadReals(ctx.input(1));
    const std::vector<float> anchors = detection::loadReals(ctx.input(2));
    const uint32_t batches = ctx.inputDims(0)[0], numAnchors = ctx.inputDims(0)[1],
                   numClasses = ctx.inputDims(0)[2];
    const uint32_t encoding = ctx.inputDims(1)[2];
    const uint32_t slots = ctx.output(0).dims[1];
    RuntimeOperand& scoresOut = ctx.output(0);
    RuntimeOperand& boxesOut = ctx.output(1);
    int32_t* classesOut = ctx.outputData<int32_t>(2);
    int32_t* counts = ctx.outputData<int32_t>(3);
    // Unused slots are zero.
    std::fill(scoresOut.buffer.begin(), scoresOut.buffer.end(), 0);
    std::fill(boxesOut.buffer.begin(), boxesOut.buffer.end(), 0);
    std::fill(classesOut, classesOut + size_t(batches) * slots, 0);
    const int32_t labelShift = p.backgroundInLabel ? 0 : 1;
    // Decoded boxes are (y1, x1, y2, x2); IoU is symmetric in the axes, so it takes them as they are.
    std::vector<float> boxes(size_t(numAnchors) * 4);
    for (uint32_t b = 0; b < batches; ++b) {
        decodeAnchorBoxes(p, anchors.data(), deltas.data() + size_t(b) * numAnchors * encoding, numAnchors,
                          encoding, boxes.data());
        std::vector<float> batchScores(scores.begin() + size_t(b) * numAnchors * numClasses,
                                       scores.begin() + size_t(b + 1) * numAnchors * numClasses);
        const std::vector<PostprocessDetection> found =
            p.regular ? regularDetections(p, batchScores, boxes, numAnchors, numClasses)
                      : fastDetections(p, batchScores, boxes, numAnchors, numClasses);
        const size_t base = size_t(b) * slots;
        for (size_t n = 0; n < found.size(); ++n) {
            detection::storeConverted(scoresOut, base + n, found[n].score);
            for (size_t k = 0; k < 4; ++k) {
                detection::storeConverted(boxesOut, (base + n) * 4 + k,
                                          boxes[size_t(found[n].anchor) * 4 + k]);
            }
            classesOut[base + n] = int32_t(found[n].cls) - labelShift;
        }
        counts[b] = int32_t(found.size());
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> detectionOperations() {
    std::vector<OperationRegistration> ops = {
        {hal::OperationType::AXIS_ALIGNED_BBOX_TRANSFORM, supportsBoxTransform, prepareBoxTransform,
         executeBoxTransform},
        {hal::OperationType::BOX_WITH_NMS_LIMIT, supportsBoxNms, prepareBoxNms, executeBoxNms},
        {hal::OperationType::GENERATE_PROPOSALS, supportsProposals, prepareProposals, executeProposals},
        {hal::OperationType::DETECTION_POSTPROCESSING, supportsPostprocess, preparePostprocess,
         executePostprocess},
    };
    for (const auto& op : roiOperations()) ops.push_back(op);
    return ops;
}

}  // namespace npu::ref::ops
