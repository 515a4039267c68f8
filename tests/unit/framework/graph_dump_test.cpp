// graphDump writes a model as a Graphviz graph: every operand and operation, every edge.
#include "npu/framework/graph_dump.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "npu/framework/cts_loader.h"

using namespace npu;

TEST_CASE("graphDump names every operation and operand and links them", "[graph]") {
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/V1_0.jsonl.gz", "conv_quant8");
    REQUIRE(tc.has_value());
    std::ostringstream out;
    framework::graphDump(tc->model, out, tc->name);
    const std::string dot = out.str();
    CHECK(dot.rfind("digraph \"conv_quant8\" {", 0) == 0);
    CHECK(dot.find("0: CONV_2D") != std::string::npos);
    for (uint32_t i = 0; i < tc->model.main.operands.size(); ++i) {
        CHECK(dot.find("  d" + std::to_string(i) + " [shape=ellipse") != std::string::npos);
    }
    for (size_t j = 0; j < tc->model.main.operations[0].inputs.size(); ++j) {
        CHECK(dot.find("d" + std::to_string(tc->model.main.operations[0].inputs[j]) + " -> op0") !=
              std::string::npos);
    }
    CHECK(dot.find("op0 -> d" + std::to_string(tc->model.main.operations[0].outputs[0])) !=
          std::string::npos);
    CHECK(dot.back() == '\n');
}

TEST_CASE("graphDump draws referenced subgraphs as clusters", "[graph]") {
    hal::Model model;
    model.referenced.resize(2);
    std::ostringstream out;
    framework::graphDump(model, out, "a \"quoted\" name");
    CHECK(out.str().find("cluster_1") != std::string::npos);
    CHECK(out.str().find("a \\\"quoted\\\" name") != std::string::npos);
}
