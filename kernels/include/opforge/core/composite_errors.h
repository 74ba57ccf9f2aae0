#pragma once
// Note [Composite errors]: a CompositeImplicitAutograd op runs other ops, and an
// argument error raised by one of them names that op (opforge.uniform for a
// bad xavier_uniform call). The generated registration of every such op calls
// it through name_composite, which adds "(in opforge.<op>)" to an error whose
// message does not name the op called, keeping its Python type.
#include <c10/util/Exception.h>

namespace opforge::check {

void name_composite(c10::Error& e, const char* op);

}  // namespace opforge::check
