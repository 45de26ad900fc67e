// What a row's check found: one of four states and a detail (why it failed, why it was skipped,
// which stub a version reached). The CSV writes the state as the `status` column (status_name) and
// the reason as `detail`; the console prints text(): "PASS", "FAIL: <detail>", "skipped: <detail>",
// "NOT IMPLEMENTED: <detail>". Nothing parses the text back: readers use the two columns.
#pragma once
#include <iosfwd>
#include <string>

namespace common {

enum class Status { pass, fail, skipped, not_implemented };

// The CSV's words: "pass", "fail", "skipped", "not_implemented".
const char* status_name(Status s);
// The inverse of status_name; throws std::invalid_argument naming the word.
Status parse_status(const std::string& word);

struct Verdict {
  Status status = Status::skipped;
  std::string detail = "not checked";  // a row nobody judged is not a pass

  static Verdict pass() { return {Status::pass, ""}; }
  static Verdict fail(std::string why) { return {Status::fail, std::move(why)}; }
  static Verdict skip(std::string why) { return {Status::skipped, std::move(why)}; }
  static Verdict not_implemented(std::string why) { return {Status::not_implemented, std::move(why)}; }
  // pass when ok, else a failure saying why_not
  static Verdict pass_if(bool ok, std::string why_not) { return ok ? pass() : fail(std::move(why_not)); }

  bool ok() const { return status == Status::pass; }
  bool failed() const { return status == Status::fail; }
  std::string text() const;  // the console's form
};

std::ostream& operator<<(std::ostream& os, const Verdict& v);

}  // namespace common
