"""A ``sys.path`` entry for ``check``'s pytest process: it holds the plugin package alone.

The runner puts this folder first on the test process's path, so ``-p pi_course_check.plugin``
loads the plugin of the ``pi_course`` that runs ``check``, never a file of the tree under test.
"""
