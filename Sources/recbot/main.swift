import RecBotCLI

RecBotLogging.bootstrap()
RecBot.main()
