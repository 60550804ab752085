"""A grid becomes its trials: the product of the values, in order, with readable labels."""

from es_lightning.tune.grid import cli_value, expand, short_names


def test_the_product_in_order_last_parameter_fastest():
    points = expand(
        {"strategy.init_args.sigma": [1e-3, 3e-3], "strategy.init_args.learning_rate": [5e-4, 1e-3, 2e-3]}
    )
    assert len(points) == 2 * 3
    assert [p.label for p in points] == [
        "sigma=0.001_learning_rate=0.0005",
        "sigma=0.001_learning_rate=0.001",
        "sigma=0.001_learning_rate=0.002",
        "sigma=0.003_learning_rate=0.0005",
        "sigma=0.003_learning_rate=0.001",
        "sigma=0.003_learning_rate=0.002",
    ]
    assert points[4].overrides() == [
        "--strategy.init_args.sigma", "0.003", "--strategy.init_args.learning_rate", "0.001",
    ]  # fmt: skip
    assert dict(points[4].settings) == {
        "strategy.init_args.sigma": 3e-3,
        "strategy.init_args.learning_rate": 1e-3,
    }


def test_labels_keep_the_whole_path_where_last_parts_clash_and_values_are_cli_words():
    names = short_names(
        [
            "stages.0.strategy.init_args.learning_rate",
            "stages.1.strategy.init_args.learning_rate",
            "trainer.batch_size",
        ]
    )
    assert names == {
        "stages.0.strategy.init_args.learning_rate": "stages.0.strategy.init_args.learning_rate",
        "stages.1.strategy.init_args.learning_rate": "stages.1.strategy.init_args.learning_rate",
        "trainer.batch_size": "batch_size",
    }
    assert cli_value(True) == "true" and cli_value("rank") == "rank" and cli_value(1e-5) == "1e-05"
    assert [p.label for p in expand({"module.task.init_args.data": ["a/b.jsonl"]})] == ["data=a_b.jsonl"]
