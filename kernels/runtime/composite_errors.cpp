// Note [Composite errors] in opforge/core/composite_errors.h.
#include <opforge/core/composite_errors.h>

#include <cctype>
#include <string>
#include <string_view>

namespace opforge::check {

namespace {

// `op` as a whole name in `text` (opforge.conv2d is not in "opforge.conv2d_backward").
bool names(std::string_view text, std::string_view op) {
  for (size_t at = text.find(op); at != std::string_view::npos; at = text.find(op, at + 1)) {
    const size_t end = at + op.size();
    if (end == text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      return true;
    }
  }
  return false;
}

}  // namespace

void name_composite(c10::Error& e, const char* op) {
  if (!names(e.msg(), op)) {
    e.add_context(std::string("in ") + op);
  }
}

}  // namespace opforge::check
