#include "runtime/composite/expanders.h"

namespace oat::composite {

std::map<std::string, Expander> builtin_expanders() {
  std::map<std::string, Expander> t;
  // Each family adds its op types here, e.g. t["Einsum"] = expand_einsum;
  return t;
}

}  // namespace oat::composite
