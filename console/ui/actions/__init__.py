"""The console's actions, grouped by what they change: the app hands each intent to one of them."""
