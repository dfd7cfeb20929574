// KernelRegistry: one explicit table per device of (op, dtype) -> kernel factory.
//
// The dtype key is the "type constraint" of the node: the dtype of its first present input
// (Where: the dtype of input 1, the first data input). Type-generic kernels (shape ops, Cast)
// register under kAnyDType.
#pragma once

#include <map>
#include <tuple>
#include <vector>

#include "runtime/kernel.h"

namespace oat {

constexpr DType kAnyDType = DType::Undefined;

class KernelRegistry {
 public:
  void add(OpId op, Device device, DType dtype, KernelFactory factory);
  void add(OpId op, Device device, std::initializer_list<DType> dtypes, KernelFactory factory);

  // Whether a kernel exists for exactly this (op, device, dtype), or a kAnyDType one.
  bool supports(OpId op, Device device, DType dtype) const;
  // Whether any kernel exists for (op, device).
  bool supports_op(OpId op, Device device) const;
  std::vector<DType> dtypes(OpId op, Device device) const;

  // Creates the kernel for `node`; throws Error naming the node, op, opset and dtype when none.
  std::unique_ptr<OpKernel> create(const Node& node, Device device, DType dtype) const;

 private:
  std::map<std::tuple<OpId, Device, DType>, KernelFactory> table_;
};

// The registry with every kernel this build has (CPU, and CUDA when built with it).
const KernelRegistry& default_registry();

// The dtype key of a node given its actual inputs (see above).
DType kernel_dtype_key(const Node& node, const std::vector<const Tensor*>& inputs);

}  // namespace oat
