#pragma once
// The networks of `npu bench cache`, largest first: the benchmark compiles the first one the NPU
// claims whole.

#include <vector>

#include "npu/framework/cts_loader.h"

namespace npu::tools {

// MobileNet-v2 at 224x224 without its pooling and classifier (builtin_networks.h).
framework::TestCase benchMobilenetV2();
// A ResNet-shaped plain CNN at 224x224 from CONV_2D, ADD and FULLY_CONNECTED only.
framework::TestCase benchResnetShaped();
// 5 CONV_2D, 4 FULLY_CONNECTED and an ADD on a 32x32x16 input, about 1.3 MB of int8 weights.
framework::TestCase benchSmallNetwork();

using BenchNetworkFactory = framework::TestCase (*)();
inline std::vector<BenchNetworkFactory> cacheBenchNetworks() {
    return {benchMobilenetV2, benchResnetShaped, benchSmallNetwork};
}

}  // namespace npu::tools
