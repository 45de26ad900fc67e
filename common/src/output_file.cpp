#include "common/output_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.hpp"

namespace common {
namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string os_error() { return std::strerror(errno); }

// A unique temporary next to `path`, opened for writing; its name in `tmp`. -1 and errno set on
// failure.
int open_temporary(const std::string& path, std::string& tmp) {
  std::vector<char> name(path.begin(), path.end());
  const std::string suffix = ".tmp." + std::string(6, 'X');  // mkstemp's template: six X replaced
  name.insert(name.end(), suffix.begin(), suffix.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  tmp = name.data();
  return fd;
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs) {
  const std::string where = "--" + flag + ": '" + path + "'";
  if (path.empty()) throw UsageError("--" + flag + " needs a path");
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError(where + " is a directory");
    for (const auto& in : inputs) {
      struct stat is;
      if (!in.empty() && stat(in.c_str(), &is) == 0 && is.st_dev == st.st_dev && is.st_ino == st.st_ino)
        throw UsageError(where + " is the input '" + in + "': refusing to overwrite it");
    }
  }
  const std::string dir = dir_of(path);
  struct stat ds;
  if (stat(dir.c_str(), &ds) != 0) throw UsageError(where + ": directory '" + dir + "': " + os_error());
  if (!S_ISDIR(ds.st_mode)) throw UsageError(where + ": '" + dir + "' is not a directory");
  std::string tmp;
  const int fd = open_temporary(path, tmp);
  if (fd < 0) throw UsageError(where + ": cannot write in '" + dir + "': " + os_error());
  close(fd);
  std::remove(tmp.c_str());
}

void make_output_dir(const std::string& dir, const std::string& flag) {
  const std::string where = "--" + flag + ": '" + dir + "'";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw UsageError(where + ": cannot create it: " + os_error());
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw UsageError(where + " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) throw UsageError(where + ": " + os_error());
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ostringstream os;
  write(os);
  write_file_atomic(path, os.str());
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp;
  const int fd = open_temporary(path, tmp);
  if (fd < 0) throw std::runtime_error("cannot write '" + path + "': " + os_error());
  auto give_up = [&](const std::string& what) {
    const std::string reason = os_error();
    close(fd);
    std::remove(tmp.c_str());
    throw std::runtime_error(what + " '" + path + "': " + reason);
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0) give_up("cannot flush");
  // mkstemp creates 0600; the file gets what a plain open would give it
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0) {
    const std::string reason = os_error();
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot close '" + path + "': " + reason);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = os_error();
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename the temporary to '" + path + "': " + reason);
  }
}

}  // namespace common
