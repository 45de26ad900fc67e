// Output files that are either complete or absent: checked for writability before a run starts
// (so a long run's results are not lost at the end), and written to a unique temporary in the
// destination directory, flushed, fsync'ed and renamed over the final path. Errors carry the
// operating system's reason.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace common {

// Throws UsageError ("--flag: 'path': reason") when `path` names a directory, its directory is
// missing or not writable (a temporary is created there and removed), or it is the same file as
// one of `inputs` (which the run reads).
void check_output_path(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs = {});

// Creates the output directory `dir` (one level) unless it exists; UsageError ("--flag: ...") with
// the OS reason when it cannot be created, is not a directory or is not writable.
void make_output_dir(const std::string& dir, const std::string& flag);

// Writes `path` atomically from what `write` puts into the stream; throws std::runtime_error with
// the path and strerror on any failure, leaving neither a partial file nor a temporary behind.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);
// The same for bytes already in memory.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace common
