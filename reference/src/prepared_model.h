#pragma once
#include <memory>
#include <vector>

#include "npu/hal/device.h"
#include "operation_context.h"
#include "registry.h"

namespace npu::ref {

// A model validated and shape-inferred once; executions run the registered kernels in order.
class ReferencePreparedModel : public hal::IPreparedModel {
public:
    static Result<std::shared_ptr<ReferencePreparedModel>> create(const hal::Model& model);

    Result<hal::ExecutionResult> executeSynchronously(const hal::Request& request, hal::MeasureTiming measure,
                                                      const hal::Deadline& deadline,
                                                      std::optional<std::chrono::nanoseconds> loopTimeout) override;

private:
    explicit ReferencePreparedModel(const hal::Model& model) : model_(model) {}
    Status prepare();
    Status bindConstants();
    Status bindInputs(const hal::Request& request, std::vector<RuntimeOperand>& operands, bool& dynamic) const;
    Status run(std::vector<RuntimeOperand>& operands, bool dynamic) const;

    hal::Model model_;  // a copy: the constants stay alive with the prepared model
    std::vector<RuntimeOperand> template_;  // constants bound; shapes inferred when static
    std::vector<const OperationRegistration*> kernels_;
    bool static_ = true;  // every shape is known at preparation
};

}  // namespace npu::ref
