// FrontEndProcess: runs ferry_redis_front_end (front_end.cc) as a child
// process and talks to it line by line over pipes. Shared by the shared
// cache tier's integration test and its bench.
//
// Thread-safety: one thread per object at a time. Spawned with
// posix_spawn (no fork of a threaded test process); the destructor sends
// "quit", closes the pipes and waits for the child.
#ifndef FERRY_TESTS_INTEGRATION_REDIS_FRONT_END_DRIVER_H_
#define FERRY_TESTS_INTEGRATION_REDIS_FRONT_END_DRIVER_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace ferry::testing {

class FrontEndProcess {
 public:
  FrontEndProcess(const std::string& binary, const std::vector<std::string>& args) {
    int to_child[2], from_child[2];
    // Close-on-exec: the next front end spawned must not inherit these
    // (dup2 onto 0 and 1 clears the flag for the child's own ends).
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
    posix_spawn_file_actions_addclose(&fa, to_child[1]);
    posix_spawn_file_actions_addclose(&fa, from_child[0]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(to_child[0]);
    close(from_child[1]);
    in_ = fdopen(to_child[1], "w");
    out_ = fdopen(from_child[0], "r");
  }
  FrontEndProcess(const FrontEndProcess&) = delete;
  FrontEndProcess& operator=(const FrontEndProcess&) = delete;
  ~FrontEndProcess() {
    if (in_ != nullptr) {
      std::fputs("quit\n", in_);
      std::fclose(in_);
    }
    if (out_ != nullptr) std::fclose(out_);
    if (pid_ > 0) {
      int status;
      waitpid(pid_, &status, 0);
    }
  }

  bool ok() const { return pid_ > 0 && in_ != nullptr && out_ != nullptr; }

  // Sends a command without waiting for its reply (to run several front
  // ends' commands at once); Reply() reads it.
  void Send(const std::string& command) {
    std::fputs(absl::StrCat(command, "\n").c_str(), in_);
    std::fflush(in_);
  }
  std::string Reply() {
    std::string line;
    int c;
    while ((c = std::fgetc(out_)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    return c == EOF && line.empty() ? "EOF" : line;
  }
  std::string Call(const std::string& command) {
    Send(command);
    return Reply();
  }
  // A number from "stats": Stat("origin_loads").
  long Stat(const std::string& name) {
    const std::string s = absl::StrCat(" ", Call("stats"), " ");
    const size_t at = s.find(absl::StrCat(" ", name, " "));
    if (at == std::string::npos) return -1;
    return std::stol(s.substr(at + name.size() + 2));
  }

 private:
  pid_t pid_ = -1;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
};

}  // namespace ferry::testing

#endif  // FERRY_TESTS_INTEGRATION_REDIS_FRONT_END_DRIVER_H_
