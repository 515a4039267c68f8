#pragma once
#include <chrono>
#include <memory>
#include <vector>

#include "npu/hal/device.h"
#include "npu/hal/prepared_model_base.h"
#include "operation_context.h"
#include "registry.h"

namespace npu::ref {

// The WHILE loop timeout (NNAPI 1.3 loopTimeoutDuration): 2 s when the request gives none, never
// more than 15 s (a longer request is clamped, as the 1.3 HAL specifies).
inline constexpr std::chrono::nanoseconds kDefaultLoopTimeout = std::chrono::seconds(2);
inline constexpr std::chrono::nanoseconds kMaxLoopTimeout = std::chrono::seconds(15);
std::chrono::nanoseconds effectiveLoopTimeout(std::optional<std::chrono::nanoseconds> requested);

// True iff the reference implements `operation` of `subgraph` for its operand types, and, for IF
// and WHILE, every operation of the subgraphs it references (recursively). Safe on unvalidated
// models: out-of-range indexes answer false.
bool isOperationSupported(const hal::Model& model, const hal::Subgraph& subgraph,
                          const hal::Operation& operation);

// A model validated and shape-inferred once; executions run the registered kernels in order.
// Every execution mode comes from hal::PreparedModelBase; this class runs one request whose
// pools are shared memory.
class ReferencePreparedModel final : public hal::PreparedModelBase {
public:
    // `buffers`: the device's driver-managed buffers (memory domains).
    static Result<std::shared_ptr<ReferencePreparedModel>> create(
        const hal::Model& model, std::shared_ptr<hal::BufferRegistry> buffers);
    ~ReferencePreparedModel() override { stopAsyncExecutions(); }

    const hal::Model& ioModel() const override { return model_; }

protected:
    Result<hal::ExecutionResult> executeShared(const hal::Request& request, hal::MeasureTiming measure,
                                               const hal::Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> loopTimeout) override;

private:
    // One subgraph (main or referenced), prepared once.
    struct Plan {
        const hal::Subgraph* subgraph = nullptr;
        std::vector<RuntimeOperand> operands;  // constants bound; shapes inferred when static
        std::vector<const OperationRegistration*> kernels;
        bool isStatic = true;  // every shape is known at preparation
    };
    class Subgraphs;  // the SubgraphRunner IF and WHILE use

    ReferencePreparedModel(const hal::Model& model, std::shared_ptr<hal::BufferRegistry> buffers)
        : PreparedModelBase(std::move(buffers)), model_(model) {}
    Status prepare();
    Status bindConstants(Plan& plan) const;
    Status preparePlan(Plan& plan, const SubgraphRunner& subgraphs) const;
    Status bindInputs(const hal::Request& request, std::vector<RuntimeOperand>& operands,
                      bool& dynamic) const;
    Status run(const Plan& plan, std::vector<RuntimeOperand>& operands, bool dynamic,
               const SubgraphRunner& subgraphs) const;
    Result<std::vector<RuntimeOperand>> runReferenced(uint32_t index,
                                                      const std::vector<const RuntimeOperand*>& inputs,
                                                      const SubgraphRunner& subgraphs) const;

    hal::Model model_;  // a copy: the constants stay alive with the prepared model
    Plan main_;
    std::vector<Plan> referenced_;  // one per Model::referenced
};

}  // namespace npu::ref
