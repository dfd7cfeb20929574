#include "train/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace oat::train {

const char* loss_scale_mode_name(LossScaleMode m) {
  switch (m) {
    case LossScaleMode::Dynamic: return "dynamic";
    case LossScaleMode::Static: return "static";
    case LossScaleMode::None: return "none";
  }
  return "?";
}

void parse_loss_scale(const std::string& text, LossScalerConfig& c) {
  if (text == "dynamic") {
    c.mode = LossScaleMode::Dynamic;
    return;
  }
  if (text == "none") {
    c.mode = LossScaleMode::None;
    return;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0)
    throw Error(cat("--loss-scale '", text, "': expected dynamic, none or a positive number"));
  c.mode = LossScaleMode::Static;
  c.init_scale = v;
}

LossScaler::LossScaler(const LossScalerConfig& c) : config_(c) {
  auto bad = [](const char* opt, double v, const char* want) {
    throw Error(cat(opt, " ", v, ": must be ", want));
  };
  if (!(std::isfinite(c.init_scale) && c.init_scale > 0)) bad("--init-scale", c.init_scale, "a positive number");
  if (!(std::isfinite(c.growth_factor) && c.growth_factor > 1)) bad("--growth-factor", c.growth_factor, "> 1");
  if (!(c.backoff_factor > 0 && c.backoff_factor < 1)) bad("--backoff-factor", c.backoff_factor, "in (0, 1)");
  if (c.growth_interval < 1) bad("--growth-interval", static_cast<double>(c.growth_interval), ">= 1");
  if (c.hysteresis < 1) bad("--hysteresis", static_cast<double>(c.hysteresis), ">= 1");
  if (!(c.min_scale >= 0 && std::isfinite(c.min_scale))) bad("--min-scale", c.min_scale, ">= 0");
  if (!(c.max_scale > 0) || c.max_scale < c.min_scale)
    bad("--max-scale", c.max_scale, "positive and >= --min-scale");
  if (c.max_scale > std::numeric_limits<float>::max())
    bad("--max-scale", c.max_scale, "at most FP32's largest value (3.4e38)");
  if (c.mode == LossScaleMode::Dynamic && (c.init_scale < c.min_scale || c.init_scale > c.max_scale))
    throw Error(cat("--init-scale ", c.init_scale, " lies outside [--min-scale ", c.min_scale,
                    ", --max-scale ", c.max_scale, "]"));
  if (c.mode == LossScaleMode::Static && c.init_scale > std::numeric_limits<float>::max())
    bad("--loss-scale", c.init_scale, "at most FP32's largest value (3.4e38)");
  state_.scale = c.mode == LossScaleMode::None ? 1.0 : c.init_scale;
  state_.hysteresis_left = c.hysteresis;
}

bool LossScaler::update(bool found_inf) {
  if (config_.mode == LossScaleMode::None) return true;
  if (found_inf) {
    ++state_.skipped_steps;
    if (config_.mode == LossScaleMode::Dynamic) {
      state_.growth_tracker = 0;
      if (state_.hysteresis_left <= 1)
        state_.scale = std::max(state_.scale * config_.backoff_factor, config_.min_scale);
      else
        --state_.hysteresis_left;
    }
    return false;
  }
  if (config_.mode == LossScaleMode::Dynamic) {
    state_.hysteresis_left = config_.hysteresis;
    if (++state_.growth_tracker >= config_.growth_interval) {
      state_.scale = std::min(state_.scale * config_.growth_factor, config_.max_scale);
      state_.growth_tracker = 0;
    }
  }
  return true;
}

std::string LossScaler::to_json() const {
  nlohmann::json j = {{"mode", loss_scale_mode_name(config_.mode)},
                      {"scale", state_.scale},
                      {"growth_tracker", state_.growth_tracker},
                      {"hysteresis_left", state_.hysteresis_left},
                      {"skipped_steps", state_.skipped_steps}};
  return j.dump();
}

void LossScaler::load_json(const std::string& text, const std::string& where) {
  LossScalerState s;
  std::string mode;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    mode = j.at("mode").get<std::string>();
    s.scale = j.at("scale").get<double>();
    s.growth_tracker = j.at("growth_tracker").get<int64_t>();
    s.hysteresis_left = j.at("hysteresis_left").get<int64_t>();
    s.skipped_steps = j.at("skipped_steps").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(where, ": malformed loss scaler state: ", e.what()));
  }
  if (mode != loss_scale_mode_name(config_.mode))
    throw Error(cat(where, ": the checkpoint's loss scaling is '", mode, "' but this run uses '",
                    loss_scale_mode_name(config_.mode), "' (--loss-scale)"));
  if (!(std::isfinite(s.scale) && s.scale > 0) || s.growth_tracker < 0 || s.hysteresis_left < 1 ||
      s.skipped_steps < 0)
    throw Error(cat(where, ": loss scaler state out of range (scale ", s.scale, ")"));
  state_ = s;
}

}  // namespace oat::train
