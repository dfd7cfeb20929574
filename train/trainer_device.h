// The Trainer's device-resident state (TrainerConfig::device != CPU); see trainer_device.cc.
// Private to train/: included by trainer.cc (which owns it) and trainer_device.cc.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/kernel.h"
#include "train/trainer.h"

namespace oat::train {

struct Trainer::DeviceRun {
  DeviceContext* dc = nullptr;
  std::map<std::string, Tensor> state;  // on the device
  DeviceAmpState amp;
  DeviceAmpRule rule;
  Tensor lr;                            // F32 device scalar, written before each step
  int64_t full_batch = 0;               // the batch size the graph is captured for
  bool capture_tried = false;
  // The captured step and its fixed buffers.
  std::unique_ptr<CapturedGraph> graph;
  Tensor x, y;                          // batch inputs and targets
  std::map<std::string, Tensor> extra;  // the other model inputs (BatchLayout::extra_inputs)
  Tensor loss_out, found_out;           // written by every replay
};

}  // namespace oat::train
