// Uses the installed public headers and library: a Runtime and its budget.
#include <cstdio>

#include "ferry/runtime/runtime.h"

int main() {
  ferry::Runtime rt({.io_threads = 1, .blocking_threads = 1, .memory_budget_bytes = 1024});
  auto ticket = rt.memory_budget().Acquire(512);
  if (!ticket.ok() || rt.memory_budget().in_use() != 512) return 1;
  std::puts("ferry consumer: ok");
  return 0;
}
