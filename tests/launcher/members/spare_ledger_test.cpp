// SpareLedger: the warm spares' bookkeeping, fed by the test with its own times.
#include "launcher/members/spare_ledger.h"

#include <gtest/gtest.h>

namespace hvdrun::launcher {
namespace {

using LedgerClock = SpareLedger::Clock;
using std::chrono::milliseconds;

WorkerId spare(int slot) {
  return WorkerId{1, slot, 0};
}

TEST(SpareLedger, SaysNothingWhenNoSpareStarted) {
  SpareLedger ledger;
  EXPECT_EQ(ledger.describe(), "");
}

TEST(SpareLedger, CountsStartsPromotionsWithTheirWaitAndTheDismissed) {
  SpareLedger ledger;
  const auto t0 = LedgerClock::now();
  ledger.started(spare(4), t0);
  ledger.started(spare(5), t0);
  ledger.promoted(spare(4), 4, "h1", t0 + milliseconds(2999));
  EXPECT_TRUE(ledger.dismiss());
  EXPECT_FALSE(ledger.dismiss()) << "the spares are told once";
  ledger.not_needed();
  EXPECT_TRUE(ledger.dismissed());
  EXPECT_EQ(ledger.describe(),
            "spares: 2 started, 1 promoted (spare 4 (host h1, waiting 2999.0 ms)), 0 ended while "
            "they waited, 1 not needed at the end");
}

TEST(SpareLedger, GivesUpAfterThreeDeathsInARowAndAPromotionEndsARun) {
  SpareLedger ledger;
  const auto t0 = LedgerClock::now();
  for (int slot = 0; slot < 5; ++slot) ledger.started(spare(slot), t0);
  EXPECT_FALSE(ledger.ended_while_waiting(spare(0)));
  EXPECT_FALSE(ledger.ended_while_waiting(spare(1)));
  ledger.promoted(spare(2), 2, "h1", t0);  // the run of deaths starts again
  EXPECT_EQ(ledger.deaths_in_a_row(), 0);
  EXPECT_FALSE(ledger.ended_while_waiting(spare(3)));
  EXPECT_FALSE(ledger.given_up());
  ledger.started(spare(6), t0);
  ledger.started(spare(7), t0);
  EXPECT_FALSE(ledger.ended_while_waiting(spare(4)));
  EXPECT_TRUE(ledger.ended_while_waiting(spare(6))) << "three in a row";
  EXPECT_TRUE(ledger.given_up());
  EXPECT_EQ(ledger.deaths_in_a_row(), 3);
  EXPECT_NE(ledger.describe().find("5 ended while they waited"), std::string::npos)
      << ledger.describe();
}

TEST(SpareLedger, TheFirstShortStartIsSaidOnce) {
  SpareLedger ledger;
  const auto t0 = LedgerClock::now();
  ledger.started(spare(0), t0);
  EXPECT_TRUE(ledger.first_shortfall(1)) << "the first start fell short";
  EXPECT_FALSE(ledger.first_shortfall(1)) << "said once";

  SpareLedger later;
  later.started(spare(0), t0);
  later.started(spare(1), t0);
  EXPECT_FALSE(later.first_shortfall(1)) << "not the first start: a refill after a failure";
}

}  // namespace
}  // namespace hvdrun::launcher
