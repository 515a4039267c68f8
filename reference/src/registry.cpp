#include "registry.h"

#include <algorithm>

namespace npu::ref {

const std::vector<OperationRegistration>& allOperations() {
    static const std::vector<OperationRegistration> all = [] {
        std::vector<OperationRegistration> v;
        for (auto family : {ops::elementwiseOperations,
                            ops::activationOperations,
                            ops::convOperations,
                            ops::fullyConnectedOperations,
                            ops::poolingOperations,
                            ops::shapeOperations,
                            ops::softmaxOperations,
                            ops::resizeOperations,
                            ops::normalizationOperations,
                            ops::spaceOperations,
                            ops::slicingOperations,
                            ops::quantizeOperations,
                            ops::lstmOperations,
                            ops::rnnOperations,
                            ops::lookupOperations,
                            ops::randomOperations,
                            ops::topkOperations,
                            ops::reductionOperations,
                            ops::gatherSplitTileOperations,
                            ops::comparisonOperations,
                            ops::unaryMathOperations,
                            ops::detectionOperations,
                            ops::controlFlowOperations,
                            ops::quantizedLstmOperations}) {
            auto ops = family();
            v.insert(v.end(), ops.begin(), ops.end());
        }
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.type < b.type; });
        return v;
    }();
    return all;
}

const OperationRegistration* findOperation(hal::OperationType type) {
    const auto& all = allOperations();
    auto it = std::lower_bound(all.begin(), all.end(), type,
                               [](const auto& r, hal::OperationType t) { return r.type < t; });
    return it != all.end() && it->type == type ? &*it : nullptr;
}

}  // namespace npu::ref
