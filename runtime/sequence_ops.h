// The sequence and optional ops (runtime/cpu/kernels/sequence.cc): their values live on the host
// (runtime/tensor.h), so they run there in every executor; a device executor places them, and any
// node that reads such a value, on the host (runtime/cuda/context.cc).
#pragma once

#include "runtime/ops.h"

namespace oat {

inline bool is_sequence_op(OpId op) {
  switch (op) {
    case OpId::SequenceEmpty:
    case OpId::SequenceConstruct:
    case OpId::SequenceInsert:
    case OpId::SequenceAt:
    case OpId::SequenceErase:
    case OpId::SequenceLength:
    case OpId::SplitToSequence:
    case OpId::ConcatFromSequence:
    case OpId::SequenceMap:
    case OpId::Optional:
    case OpId::OptionalHasElement:
    case OpId::OptionalGetElement:
      return true;
    default:
      return false;
  }
}

}  // namespace oat
