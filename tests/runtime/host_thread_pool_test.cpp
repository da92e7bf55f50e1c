// The host backend's thread pool: every task of a launch runs exactly once, on several threads
// when asked, workers are created once and reused, and launches from several callers at once
// each finish with their own tasks.

#include "runtime/host/host_thread_pool.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace widefuse;

TEST(HostThreadPool, RunsEveryTaskExactlyOnce) {
  HostThreadPool pool;
  for (unsigned threads : {1u, 2u, 4u})
    for (unsigned count : {0u, 1u, 3u, 1000u}) {
      std::vector<std::atomic<int>> runs(count);
      pool.run(count, threads, [&](unsigned task) { runs[task]++; });
      for (unsigned task = 0; task < count; ++task)
        EXPECT_EQ(runs[task].load(), 1) << task << " of " << count << ", " << threads << " threads";
    }
}

TEST(HostThreadPool, RunsTasksOnSeveralThreadsAndReusesItsWorkers) {
  HostThreadPool pool;
  std::mutex mutex;
  std::set<std::thread::id> seen;
  // Each task waits until a second thread has joined in, so one thread alone cannot finish.
  std::atomic<int> started{0};
  pool.run(2, 2, [&](unsigned) {
    started++;
    while (started.load() < 2)
      std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(pool.numWorkers(), 1u); // the caller is the other thread
  for (int launch = 0; launch < 100; ++launch)
    pool.run(64, 3, [](unsigned) {});
  EXPECT_EQ(pool.numWorkers(), 2u) << "workers are created once, not per launch";
}

TEST(HostThreadPool, ConcurrentCallersEachRunTheirOwnTasks) {
  HostThreadPool pool;
  constexpr int kCallers = 6, kLaunches = 50, kTasks = 97;
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int caller = 0; caller < kCallers; ++caller)
    callers.emplace_back([&, caller] {
      for (int launch = 0; launch < kLaunches; ++launch) {
        std::vector<int> runs(kTasks, 0);
        std::atomic<int> total{0};
        pool.run(kTasks, 3, [&](unsigned task) {
          __atomic_fetch_add(&runs[task], 1, __ATOMIC_RELAXED);
          total += caller + 1;
        });
        for (int count : runs)
          wrong += count != 1;
        wrong += total.load() != kTasks * (caller + 1);
      }
    });
  for (std::thread& caller : callers)
    caller.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(HostThreadPool, AForkedChildRunsLaunchesOnAPoolOfItsOwn) {
  // The parent's workers do not exist in a child (a DataLoader worker): a launch there gets
  // workers of its own instead of counting on the parent's.
  HostThreadPool::global().run(8, 2, [](unsigned) {});
  ASSERT_GE(HostThreadPool::global().numWorkers(), 1u);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20); // a child left waiting for a second thread dies of SIGALRM
    std::atomic<int> started{0};
    HostThreadPool::global().run(2, 2, [&](unsigned) {
      started++;
      while (started.load() < 2) // needs a second thread to finish
        std::this_thread::yield();
    });
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}
