from hw_models.cli import main

main()
