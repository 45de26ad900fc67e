#include "common/status.hpp"

#include <ostream>
#include <stdexcept>

namespace common {

const char* status_name(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::skipped: return "skipped";
    case Status::not_implemented: return "not_implemented";
  }
  return "fail";
}

Status parse_status(const std::string& word) {
  for (Status s : {Status::pass, Status::fail, Status::skipped, Status::not_implemented})
    if (word == status_name(s)) return s;
  throw std::invalid_argument("unknown status '" + word + "' (pass, fail, skipped or not_implemented)");
}

std::string Verdict::text() const {
  switch (status) {
    case Status::pass: return "PASS";
    case Status::fail: return "FAIL: " + detail;
    case Status::skipped: return "skipped: " + detail;
    case Status::not_implemented: return "NOT IMPLEMENTED: " + detail;
  }
  return "FAIL: " + detail;
}

std::ostream& operator<<(std::ostream& os, const Verdict& v) { return os << v.text(); }

}  // namespace common
