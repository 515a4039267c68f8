#pragma once
// graphDump: any model as a Graphviz .dot graph (the NNAPI utility of the same name), for
// debugging: operations as boxes, operands as ellipses (inputs, outputs and constants styled
// apart), edges in data-flow order; referenced subgraphs as clusters.

#include <ostream>
#include <string>

#include "npu/hal/types.h"

namespace npu::framework {

void graphDump(const hal::Model& model, std::ostream& out, const std::string& name = "model");

}  // namespace npu::framework
