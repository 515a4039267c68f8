// npu quantize (see cmd_quantize.h and docs/onnx.md).
#include "cmd_quantize.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cmd_onnx.h"
#include "device_factory.h"
#include "npu/framework/onnx_quantize.h"

namespace npu::tools {

QuantizeCli::QuantizeCli(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "quantize", "Post-training quantization of a float ONNX model to a quant8 QDQ model (docs/onnx.md)");
    cmd_->add_option("model", model_, "MODEL.onnx (float)")->required()->check(CLI::ExistingFile);
    cmd_->add_option("-o,--output", output_, "the quantized model to write")->required();
    auto* dir =
        cmd_->add_option("--calibration", calibrationDir_,
                         "directory of calibration inputs (.npy / .pb, sorted by name; one file per sample, "
                         "or one per input in input order)")
            ->check(CLI::ExistingDirectory);
    auto* random = cmd_->add_option("--calibration-random", randomSamples_,
                                    "calibrate on N samples of uniform values in [-1, 1) (seeded) instead");
    dir->excludes(random);
    cmd_->add_option("--seed", seed_, "seed of --calibration-random")->capture_default_str();
    cmd_->add_option("--method", method_, "activation ranges: min/max or a percentile of the values")
        ->check(CLI::IsMember({"minmax", "percentile"}))
        ->capture_default_str();
    cmd_->add_option("--percentile", percentile_, "--method percentile: P in [50, 100]")
        ->check(CLI::Range(50.0, 100.0))
        ->capture_default_str();
    cmd_->add_option("--activations", activations_, "activation type: uint8 (asymmetric) or int8")
        ->check(CLI::IsMember({"uint8", "int8"}))
        ->capture_default_str();
    cmd_->add_option(
        "--input-shape", inputShapes_,
        "NAME=1x3x48x192 for an input with dynamic dimensions (needed with --calibration-random); "
        "repeatable");
    cmd_->add_flag("--json", json_, "print the report as JSON");
}

bool QuantizeCli::parsed() const {
    return cmd_->parsed();
}

int QuantizeCli::run() const {
    auto fail = [](const Error& e, int code) {
        std::fprintf(stderr, "npu quantize: %s\n", e.message.c_str());
        return code;
    };
    if (calibrationDir_.empty() && randomSamples_ == 0)
        return std::fprintf(stderr, "npu quantize: give --calibration DIR or --calibration-random N\n"), 2;
    framework::OnnxQuantizeOptions options;
    auto shapes = parseInputShapes(inputShapes_);
    if (!shapes) return fail(shapes.error(), 2);
    options.import.inputShapes = *shapes;
    options.method = method_ == "percentile" ? framework::OnnxQuantizeOptions::Method::Percentile
                                             : framework::OnnxQuantizeOptions::Method::MinMax;
    options.percentile = percentile_;
    options.signedActivations = activations_ == "int8";
    auto model = framework::importOnnxModel(model_, options.import);
    if (!model) return fail(model.error(), model.error().status == framework::kOnnxUnsupported ? 3 : 2);
    auto samples = calibrationDir_.empty()
                       ? framework::randomCalibration(*model, randomSamples_, seed_)
                       : framework::loadCalibrationDir(calibrationDir_, model->inputNames.size());
    if (!samples) return fail(samples.error(), 2);
    auto ref = openDevice({.device = "reference"});
    if (!ref) return fail(ref.error(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    framework::OnnxQuantizeReport report;
    auto bytes = framework::quantizeOnnxModel(model_, *samples, *ref->device, options, &report);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!bytes) return fail(bytes.error(), bytes.error().status == framework::kOnnxUnsupported ? 3 : 1);
    std::ofstream out(output_, std::ios::binary);
    out.write(bytes->data(), std::streamsize(bytes->size()));
    if (!out.good()) return std::fprintf(stderr, "npu quantize: %s: cannot write\n", output_.c_str()), 1;
    if (json_) {
        nlohmann::json j = {{"model", model_},
                            {"output", output_},
                            {"samples", report.samples},
                            {"method", method_},
                            {"activations", activations_},
                            {"opset", report.opset},
                            {"quantized_tensors", report.quantizedTensors},
                            {"qlinear_convs", report.quantizedConvs},
                            {"float_nodes", report.floatNodes},
                            {"rewritten_nodes", report.rewrittenNodes},
                            {"compared_output", report.comparedOutput},
                            {"classifier", report.classifier},
                            {"max_abs_error", report.maxAbsError},
                            {"mean_abs_error", report.meanAbsError},
                            {"quantize_ms", ms}};
        j["top1_agreement"] =
            report.classifier ? nlohmann::json(report.top1Agreement) : nlohmann::json(nullptr);
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("quantized %s -> %s (%zu bytes, opset %lld) in %.0f ms\n", model_.c_str(), output_.c_str(),
                bytes->size(), static_cast<long long>(report.opset), ms);
    std::printf("calibration: %zu sample(s), %s ranges, %s activations\n", report.samples,
                method_ == "percentile" ? fmt::format("percentile {:g}", percentile_).c_str() : "min/max",
                activations_.c_str());
    std::printf(
        "%zu activations quantized, %zu Conv -> QLinearConv (int8 weights per output channel), %zu nodes "
        "left in float, %zu rewritten (Div by a constant, HardSigmoid)\n",
        report.quantizedTensors, report.quantizedConvs, report.floatNodes, report.rewrittenNodes);
    std::printf("accuracy vs the float model on the calibration set (output %s): ",
                report.comparedOutput.c_str());
    if (report.classifier) std::printf("top-1 agreement %.1f %%, ", 100.0 * report.top1Agreement);
    std::printf("max abs error %.6g, mean abs error %.6g\n", report.maxAbsError, report.meanAbsError);
    return 0;
}

}  // namespace npu::tools
