"""lighteval 0.13 custom task for ``bench/lighteval_runs.py``: ARC-Easy validation from a local folder.

Same prompt function, metric and few-shot selection as lighteval's built-in ``arc:easy``
(``lighteval/tasks/tasks/arc.py``); differences: a local dataset folder (``hf_repo``, a folder with a
parquet file and a README.md ``configs:`` block, written by ``bench/lighteval_runs.py``), the split
(validation: the only one offline) and the name (a custom task may not reuse a built-in's). Loaded by
lighteval with ``--custom-tasks``; never imported by repaudit.
"""

import os

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.tasks.arc import arc_prompt

arc_easy_local = LightevalTaskConfig(
    name="arc_easy_local",
    prompt_function=arc_prompt,
    hf_repo=os.environ["ARC_EASY_LOCAL"],
    hf_subset="ARC-Easy",
    hf_avail_splits=["validation"],
    evaluation_splits=["validation"],
    few_shots_split=None,
    few_shots_select="random_sampling_from_train",
    generation_size=1,
    metrics=[Metrics.loglikelihood_acc],
    stop_sequence=["\n"],
    version=0,
)

TASKS_TABLE = [arc_easy_local]
