#include "runtime/registry.h"

#include <algorithm>

#include "runtime/cpu/register.h"
#include "runtime/cuda/device.h"

namespace oat {

void KernelRegistry::add(OpId op, Device device, DType dtype, KernelFactory factory) {
  table_[{op, device, dtype}] = std::move(factory);
}

void KernelRegistry::add(OpId op, Device device, std::initializer_list<DType> dtypes,
                         KernelFactory factory) {
  for (DType t : dtypes) add(op, device, t, factory);
}

bool KernelRegistry::supports(OpId op, Device device, DType dtype) const {
  return table_.count({op, device, dtype}) || table_.count({op, device, kAnyDType});
}

bool KernelRegistry::supports_op(OpId op, Device device) const {
  auto it = table_.lower_bound({op, device, static_cast<DType>(0)});
  return it != table_.end() && std::get<0>(it->first) == op && std::get<1>(it->first) == device;
}

std::vector<DType> KernelRegistry::dtypes(OpId op, Device device) const {
  std::vector<DType> r;
  for (const auto& [key, f] : table_)
    if (std::get<0>(key) == op && std::get<1>(key) == device) r.push_back(std::get<2>(key));
  return r;
}

std::unique_ptr<OpKernel> KernelRegistry::create(const Node& node, Device device,
                                                 DType dtype) const {
  auto it = table_.find({node.op, device, dtype});
  if (it == table_.end()) it = table_.find({node.op, device, kAnyDType});
  if (it == table_.end()) {
    if (!supports_op(node.op, device))
      throw Error(cat(node.describe(), ": op ", node.op_type, " is not supported on ",
                      device_name(device)));
    // A node whose inputs were all left out has no dtype to pick a kernel by ("dtype undefined"
    // would say nothing useful).
    if (dtype == DType::Undefined &&
        std::all_of(node.inputs.begin(), node.inputs.end(),
                    [](const std::string& i) { return i.empty(); }))
      throw Error(cat(node.describe(), ": has no inputs, but ", node.op_type,
                      " reads at least one"));
    std::string have;
    for (DType t : dtypes(node.op, device)) have += std::string(have.empty() ? "" : ", ") + dtype_name(t);
    throw Unsupported(cat(node.describe(), ": no ", device_name(device), " kernel for dtype ",
                          dtype_name(dtype), " (have: ", have, ")"),
                      cat(node.op_type, "[", dtype_name(dtype), "]"));
  }
  return it->second(node);
}

const KernelRegistry& default_registry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    cpu::register_kernels(r);
    cuda::register_kernels(r);  // nothing in a build without the CUDA backend
    return r;
  }();
  return registry;
}

DType kernel_dtype_key(const Node& node, const std::vector<const Tensor*>& inputs) {
  size_t first = node.op == OpId::Where ? 1 : 0;
  for (size_t i = first; i < inputs.size(); ++i)
    if (inputs[i]) return inputs[i]->dtype();
  return kAnyDType;
}

}  // namespace oat
