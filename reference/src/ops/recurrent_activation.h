#pragma once
// The activation of the float recurrent operations (RNN, LSTM; lstm.cpp, rnn.cpp): the fused
// activations (0 none, 1 RELU, 2 RELU1, 3 RELU6) and 4 TANH, 6 SIGMOID.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace npu::ref::ops {

inline float recurrentActivation(float x, int32_t activation) {
    switch (activation) {
        case 1:
            return std::max(0.0f, x);
        case 2:
            return std::clamp(x, -1.0f, 1.0f);
        case 3:
            return std::clamp(x, 0.0f, 6.0f);
        case 4:
            return std::tanh(x);
        case 6:
            return 1.0f / (1.0f + std::exp(-x));
        default:
            return x;
    }
}

}  // namespace npu::ref::ops
