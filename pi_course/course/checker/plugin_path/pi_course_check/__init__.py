"""``check``'s pytest plugin and its contract with the runner (:mod:`pi_course.course.checker.testrun`)."""
