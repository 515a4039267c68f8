#pragma once
// A long model for tests of running work (cancel, deadlines, progress): one checkpoint per
// operation when it compiles and when it runs.
#include <cstdint>

#include "../hal/execution_suite.h"

namespace npu::shim::test {

// A long model: `ops` ADDs in a chain (t1 = a + a, t2 = t1 + a, ...) over n bytes.
inline hal::Model chainModel(uint32_t ops, uint32_t n) {
    hal::Model m = hal::test::addModel({1, n});  // operands: a, b, activation, out
    m.main.operations.clear();
    m.main.operands[1].lifetime = hal::OperandLifeTime::TEMPORARY_VARIABLE;
    m.main.operands[3].lifetime = hal::OperandLifeTime::TEMPORARY_VARIABLE;
    const hal::Operand tensor = m.main.operands[0];
    uint32_t previous = 0;
    for (uint32_t k = 0; k < ops; ++k) {
        uint32_t result = 0;
        if (k == 0) {
            result = 1;
        } else if (k == 1) {
            result = 3;
        } else {
            result = static_cast<uint32_t>(m.main.operands.size());
            hal::Operand t = tensor;
            t.lifetime = hal::OperandLifeTime::TEMPORARY_VARIABLE;
            m.main.operands.push_back(t);
        }
        m.main.operations.push_back({hal::OperationType::ADD, {previous, 0, 2}, {result}});
        previous = result;
    }
    m.main.operands[previous].lifetime = hal::OperandLifeTime::SUBGRAPH_OUTPUT;
    m.main.inputIndexes = {0};
    m.main.outputIndexes = {previous};
    return m;
}

}  // namespace npu::shim::test
