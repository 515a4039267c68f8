#pragma once
// Small ONNX models built in tests with libonnx's protobuf classes, and tensor helpers (shared by
// the ONNX importer and quantizer tests).
#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <vector>

#include "npu/framework/onnx_import.h"

namespace onnx_test {

using npu::framework::OnnxTensor;
using npu::hal::OperationType;

struct GraphBuilder {
    onnx::ModelProto model;
    explicit GraphBuilder(int64_t opset = 13) {
        model.set_ir_version(8);
        auto* id = model.add_opset_import();
        id->set_domain("");
        id->set_version(opset);
        model.mutable_graph()->set_name("g");
    }
    onnx::ValueInfoProto* io(bool input, const std::string& name, const std::vector<int64_t>& dims) {
        auto* vi = input ? model.mutable_graph()->add_input() : model.mutable_graph()->add_output();
        vi->set_name(name);
        auto* t = vi->mutable_type()->mutable_tensor_type();
        t->set_elem_type(onnx::TensorProto::FLOAT);
        auto* shape = t->mutable_shape();
        for (int64_t d : dims) {
            if (d < 0)
                shape->add_dim()->set_dim_param("N");
            else
                shape->add_dim()->set_dim_value(d);
        }
        return vi;
    }
    void input(const std::string& n, const std::vector<int64_t>& d) { io(true, n, d); }
    void output(const std::string& n, const std::vector<int64_t>& d) { io(false, n, d); }
    void initializer(const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<float>& values) {
        auto* t = model.mutable_graph()->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        for (int64_t d : dims) t->add_dims(d);
        for (float v : values) t->add_float_data(v);
    }
    onnx::NodeProto* node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                          const std::string& name = {}) {
        auto* n = model.mutable_graph()->add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (auto& s : in) n->add_input(s);
        for (auto& s : out) n->add_output(s);
        return n;
    }
    static void attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& ints) {
        auto* a = n->add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : ints) a->add_ints(v);
    }
    static void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
        auto* a = n->add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(v);
    }
    npu::Result<npu::framework::OnnxImportedModel> import(
        const npu::framework::OnnxImportOptions& options = {}) const {
        return npu::framework::importOnnxModelBytes(model.SerializeAsString(), options, "test");
    }
};

inline OnnxTensor floatTensor(const std::vector<int64_t>& dims, const std::vector<float>& values) {
    OnnxTensor t;
    t.dims = dims;
    t.data.resize(values.size() * 4);
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
}

inline std::vector<float> floats(const OnnxTensor& t) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
}

inline std::vector<OperationType> opTypes(const npu::framework::OnnxImportedModel& m) {
    std::vector<OperationType> types;
    for (const auto& op : m.model.main.operations) types.push_back(op.type);
    return types;
}

inline std::vector<float> ramp(size_t n, float scale = 0.1f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = float(int(i % 11) - 5) * scale;
    return v;
}

}  // namespace onnx_test
